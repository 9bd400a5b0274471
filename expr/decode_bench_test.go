package expr

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// typicalStepOutput is a step output of the size an audit decodes for most
// steps (about 300 bytes): a few fields, a short list, a nested object.
const typicalStepOutput = `{"status":"done","label":"build-2024","confidence":0.92,"files":["cmd/stratum/main.go","engine/record.go","expr/value.go"],"summary":"Refactored the decoder; all tests pass.\nNo behaviour change.","checks":{"tests":true,"lint":true,"vet":null},"counts":{"added":120,"removed":-37},"ratio":1.5e-3}`

// largeDocument returns a JSON document of about size bytes: an array of
// records mixing strings (some with escapes and non-ASCII text), numbers,
// literals and nested containers.
func largeDocument(size int) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item-%d","path":"src/pkg%d/file_%d.go","score":%g,"ok":%t,"tags":["alpha","beta\t\"q\"","gamma é \u00e9"],"meta":{"line":%d,"col":%d,"note":null}}`,
			i, i, i%17, i, float64(i)*0.37, i%3 == 0, i*7, i%80)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

func benchDecode(b *testing.B, decode func([]byte) (any, error), data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSON measures DecodeJSON on what an audit decodes: typical
// step outputs, and a large document.
func BenchmarkDecodeJSON(b *testing.B) {
	b.Run("step300B", func(b *testing.B) { benchDecode(b, DecodeJSON, []byte(typicalStepOutput)) })
	b.Run("doc64KiB", func(b *testing.B) { benchDecode(b, DecodeJSON, largeDocument(64<<10)) })
}

// BenchmarkDecodeJSONTokens is BenchmarkDecodeJSON on encoding/json's token
// decoder, which DecodeJSON was before the scanner: the ratio of the two,
// measured in one run, is the gain.
func BenchmarkDecodeJSONTokens(b *testing.B) {
	b.Run("step300B", func(b *testing.B) { benchDecode(b, decodeJSONTokens, []byte(typicalStepOutput)) })
	b.Run("doc64KiB", func(b *testing.B) { benchDecode(b, decodeJSONTokens, largeDocument(64<<10)) })
}

// BenchmarkUnquoteJSON measures UnquoteJSON and UnquoteJSONBytes on a
// document held as a string (as the engine's records hold their JSON):
// plain runs between escaped quotes.
func BenchmarkUnquoteJSON(b *testing.B) {
	lit := []byte(strconv.Quote(string(largeDocument(64 << 10))))
	b.Run("string", func(b *testing.B) {
		b.SetBytes(int64(len(lit)))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := UnquoteJSON(lit); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("bytes", func(b *testing.B) {
		b.SetBytes(int64(len(lit)))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := UnquoteJSONBytes(lit); !ok {
				b.Fatal("refused")
			}
		}
	})
}
