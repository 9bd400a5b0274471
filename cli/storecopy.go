package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/stratum-go/stratum/store"
)

// storeCmd is "stratum store copy": moving runs between stores.
type storeCmd struct {
	from, to string
}

func (*storeCmd) Name() string     { return "store" }
func (*storeCmd) Synopsis() string { return "copy --from DIR|DSN --to DIR|DSN [RUN...]" }
func (*storeCmd) Short() string    { return "copy runs between run stores (files, PostgreSQL)" }
func (*storeCmd) Long() string {
	return `Store copy copies runs, with their whole event chains, from one run store
to another: from files to PostgreSQL, back, or between two of either. A
store is a directory (a state root, such as ~/.stratum/flows) or a
postgres:// DSN (docs/storage.md, "PostgreSQL").

With no RUN, every run of the source is copied. Each run is checked at
the source as "stratum audit --verify" checks it, written to the
destination with its events exactly as they are (the same seqs, marks
and hashes), and verified on arrival against the source's head. A run
that already exists in the destination is never overwritten. The
source is not changed.

Exit status: 0 when every run was copied, 1 when one was not (each is
named on stderr), 2 for a usage error.`
}

func (c *storeCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.from, "from", "", "the source store: a `DIR` or a postgres:// DSN")
	fs.StringVar(&c.to, "to", "", "the destination store: a `DIR` or a postgres:// DSN")
}

func (c *storeCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || args[0] != "copy" {
		return usagef("expected copy")
	}
	if c.from == "" || c.to == "" {
		return usagef("copy needs --from and --to")
	}
	ids := args[1:]
	for _, id := range ids {
		if err := store.ValidateRunID(id); err != nil {
			return usagef("%v", err)
		}
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, nil))
	src, err := openStoreAt(c.from, log)
	if err != nil {
		return err
	}
	defer src.close()
	dst, err := openStoreAt(c.to, log)
	if err != nil {
		return err
	}
	defer dst.close()
	from, ok1 := src.store.(store.Copier)
	to, ok2 := dst.store.(store.Copier)
	if !ok1 || !ok2 {
		return errors.New("these stores cannot copy runs")
	}
	if len(ids) == 0 {
		runs, err := src.store.List(ctx)
		if err != nil {
			return fmt.Errorf("list the runs of %s: %w", src.where, err)
		}
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
	}
	failed := 0
	for _, id := range ids {
		h, err := copyRun(ctx, from, to, dst.store, id)
		if err != nil {
			failed++
			fmt.Fprintf(env.Stderr, "stratum store copy: %s not copied: %v\n", id, err)
			continue
		}
		fmt.Fprintf(env.Stdout, "copied %s: %s, head seq %d, hash %s; verified at %s\n", id, plural(int(h.Seq), "event"), h.Seq, h.Hash, dst.where)
	}
	if failed > 0 {
		fmt.Fprintf(env.Stderr, "stratum store copy: %d of %s not copied\n", failed, plural(len(ids), "run"))
		return exitCode(ExitFailure)
	}
	return nil
}

// copyRun copies one run and verifies it on arrival against the source's
// head.
func copyRun(ctx context.Context, from, to store.Copier, dst store.Store, id string) (store.Head, error) {
	c, err := from.ExportRun(ctx, id)
	if err != nil {
		return store.Head{}, fmt.Errorf("at the source: %w", err)
	}
	h, err := to.ImportRun(ctx, c)
	if errors.Is(err, store.ErrRunExists) {
		return store.Head{}, errors.New("the destination has a run with this id; it was left as it is")
	}
	if err != nil {
		return store.Head{}, err
	}
	rep, err := dst.Verify(ctx, id, store.VerifyOptions{Head: h.Hash})
	if err != nil {
		return store.Head{}, fmt.Errorf("the copy does not verify: %w", err)
	}
	if rep.Head != h {
		return store.Head{}, fmt.Errorf("the copy's head is seq %d, hash %s; the source's seq %d, hash %s", rep.Head.Seq, rep.Head.Hash, h.Seq, h.Hash)
	}
	return h, nil
}
