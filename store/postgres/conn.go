package postgres

import (
	"bufio"
	"context"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// readBufferSize is how much a connection reads from its socket at once.
// pgx reads 8 KiB at a time, which for a listing of 10,000 runs (about
// 5 MB of rows) is some 1,500 reads; with this buffer it is about 100,
// and the listing a few milliseconds shorter (docs/storage.md, "Costs on
// PostgreSQL").
const readBufferSize = 256 << 10

// bufferReads makes the connections cfg dials read through a buffer of
// readBufferSize.
func bufferReads(cfg *pgconn.Config) {
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBufferSize)}, nil
	}
}

// bufferedConn is a connection whose reads go through r. Everything else
// (writes, deadlines, closing) is the connection's own, so a deadline
// still interrupts a read waiting in r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
