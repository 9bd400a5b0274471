package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/store"
)

// probeServer is an SDK server with one tool, probe, that records how many
// of its calls run at once.
func probeServer(running, peak *atomic.Int64) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "probe", Version: "0"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "probe"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("a", 4<<10)}}}, nil, nil
	})
	return srv
}

// TestStreamTransportBackpressure runs the transport under a real SDK
// server with a client that writes 2,000 calls and reads nothing: the
// transport stops reading once its small limits are reached (the client's
// writes block), no more calls run at once than the in-flight limit, and
// once the client reads, every call is answered exactly once and the end
// of the input waits for the last answers.
func TestStreamTransportBackpressure(t *testing.T) {
	const n = 2000
	l := gateLimits{requests: 4, requestBytes: 1 << 20, heldBytes: 1 << 20, heldFrames: 8}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, g := newStreamTransport(inR, outW, nil, 1<<20, l)
	var running, peak atomic.Int64
	served := make(chan error, 1)
	go func() {
		err := probeServer(&running, &peak).Run(context.Background(), tr)
		outW.Close() // a server that stops early fails the reads below instead of hanging them
		served <- err
	}()

	out := bufio.NewReader(outR)
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n")
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":0,"result"`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	var written atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= n; i++ {
			// One Write per request: an io.Pipe hands each to exactly one Read.
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"probe","arguments":{}}}`+"\n", i); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
			written.Add(1)
		}
		inW.Close()
	}()
	// The filter is blocked once more than heldFrames wait.
	waitFor(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.held) > l.heldFrames
	})
	// In flight, held (one past the bound) and the line being read.
	if w, bound := written.Load(), int64(l.requests+l.heldFrames+2); w > bound {
		t.Errorf("the transport read %d requests from a client that reads nothing, want at most %d", w, bound)
	}

	seen := map[string]bool{}
	for len(seen) < n {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d answers: %v", len(seen), err)
		}
		id, ok := responseID([]byte(line))
		key := fmt.Sprint(id)
		if !ok || seen[key] || !strings.Contains(line, `"result"`) {
			t.Fatalf("unexpected answer after %d: %.200q", len(seen), line)
		}
		seen[key] = true
	}
	wg.Wait()
	if err := <-served; err != nil {
		t.Errorf("Run: %v", err)
	}
	if p := peak.Load(); p > int64(l.requests) {
		t.Errorf("%d calls ran at once, want at most %d", p, l.requests)
	}
}

// lingeringWriter returns from each Write a moment after the bytes have
// reached the reader, which widens the window between a client reading an
// answer and the transport noting it.
type lingeringWriter struct{ w io.Writer }

func (l lingeringWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	time.Sleep(2 * time.Millisecond)
	return n, err
}

// TestStreamTransportReusesAnsweredIDs: a client may use an id again as
// soon as it has read the answer to the request that had it; the
// transport refuses only an id still in progress.
func TestStreamTransportReusesAnsweredIDs(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, _ := newStreamTransport(inR, lingeringWriter{outW}, nil, 1<<20, defaultGateLimits)
	var running, peak atomic.Int64
	served := make(chan error, 1)
	go func() {
		err := probeServer(&running, &peak).Run(context.Background(), tr)
		outW.Close() // a server that stops early fails the reads below instead of hanging them
		served <- err
	}()
	out := bufio.NewReader(outR)
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":"same","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for round := 0; ; round++ {
		line, err := out.ReadString('\n')
		if err != nil || !strings.Contains(line, `"id":"same","result"`) {
			t.Fatalf("round %d: %.200q, %v", round, line, err)
		}
		if round == 50 {
			break
		}
		go io.WriteString(inW, `{"jsonrpc":"2.0","id":"same","method":"ping"}`+"\n")
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// BenchmarkStreamTransportLargeArgument: one stratum_validate call with a
// 10 MB spec through the stream transport and the real server,
// in-process. B/op is what the server allocates for such a request
// (transport, SDK and tool decoding; the validator refuses the spec by
// its size). With -memprofile it shows where.
func BenchmarkStreamTransportLargeArgument(b *testing.B) {
	st, err := store.NewFileStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	eng := engine.New(st, engine.Options{})
	defer eng.Close()
	g, err := guard.New(guard.Options{Root: b.TempDir(), Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(Deps{Engine: eng, Guard: g, Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go srv.Run(context.Background(), NewStreamTransport(inR, outW, nil))
	out := bufio.NewReaderSize(outR, 1<<20)
	roundTrip := func(frame string) string {
		go io.WriteString(inW, frame+"\n")
		line, err := out.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return line
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	spec, _ := json.Marshal("version: 1\n# " + strings.Repeat("x", 10<<20) + "\n")
	frame := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":` + string(spec) + `}}}`
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if line := roundTrip(frame); !strings.Contains(line, `\"status\":\"invalid\"`) {
			b.Fatalf("answer %.300s", line)
		}
	}
	b.StopTimer()
	inW.Close()
}
