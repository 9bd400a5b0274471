// Command stratum is the Stratum CLI and MCP server. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratum-go/stratum/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
