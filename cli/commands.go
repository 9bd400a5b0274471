package cli

// Version is the stratum version, overridable at link time with
// -ldflags "-X github.com/stratum-go/stratum/cli.Version=...".
var Version = "0.1.0-dev"

// commands lists every subcommand. Each entry makes a fresh command value.
// Keep one line per command, in alphabetical order.
func commands() []func() command {
	return []func() command{
		func() command { return &auditCmd{} },
		func() command { return &diffCmd{} },
		func() command { return &evalCmd{} },
		func() command { return &flowCmd{} },
		func() command { return &gateCmd{} },
		func() command { return &graphCmd{} },
		func() command { return &guardCmd{} },
		func() command { return &mcpCmd{} },
		func() command { return &migrateCmd{} },
		func() command { return &queryCmd{} },
		func() command { return &runCmd{} },
		func() command { return &serveCmd{} },
		func() command { return &speckitCmd{} },
		func() command { return &storeCmd{} },
		func() command { return &validateCmd{} },
		func() command { return &watchCmd{} },
	}
}
