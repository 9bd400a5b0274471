package expr

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate golden files under testdata (the oracles need node)")

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {100, "100"}, {2.5, "2.5"}, {-2.75, "-2.75"},
		{1e21, "1e+21"}, {-1e21, "-1e+21"}, {123456789012345680000, "123456789012345680000"},
		{0.000001, "0.000001"}, {1e-7, "1e-7"}, {1.0 / 3, "0.3333333333333333"},
		{math.Float64frombits(0x3FD3333333333334), "0.30000000000000004"}, {5e-324, "5e-324"}, {1e308, "1e+308"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {9007199254740992, "9007199254740992"},
		{1 << 53 * 4, "36028797018963970"}, {1.5e-7, "1.5e-7"}, {123e-20, "1.23e-18"},
		{1e20, "100000000000000000000"}, {0.5, "0.5"}, {12.0, "12"},
	}
	for _, tt := range tests {
		if got := FormatNumber(tt.f); got != tt.want {
			t.Errorf("FormatNumber(%v) = %s, want %s", tt.f, got, tt.want)
		}
	}
}

// TestFormatNumberOracle compares FormatNumber with JavaScript's String()
// over random doubles recorded in testdata/numbers.txt.
func TestFormatNumberOracle(t *testing.T) {
	path := filepath.Join("testdata", "numbers.txt")
	if *update {
		var in bytes.Buffer
		rnd := rand.New(rand.NewSource(2))
		for n := 0; n < 3000; {
			var f float64
			switch n % 4 {
			case 0:
				f = math.Float64frombits(rnd.Uint64())
			case 1:
				f = rnd.NormFloat64() * math.Pow(10, float64(rnd.Intn(50)-25))
			case 2:
				f = float64(rnd.Int63n(1<<62)) * math.Pow(10, float64(rnd.Intn(10)))
			case 3:
				f = math.Round(rnd.Float64()*1e6) / math.Pow(10, float64(rnd.Intn(12)))
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			n++
			fmt.Fprintf(&in, "%016x\n", math.Float64bits(f))
		}
		cmd := exec.Command("node", filepath.Join("testdata", "numbers.js"))
		cmd.Stdin = &in
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node: %v", err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		hex, want, _ := strings.Cut(sc.Text(), " ")
		bits, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if got := FormatNumber(math.Float64frombits(bits)); got != want {
			t.Errorf("FormatNumber(%s) = %s, JavaScript says %s", hex, got, want)
		}
	}
	if n < 1000 {
		t.Errorf("only %d numbers in %s", n, path)
	}
}

func TestObjectPropertyOrder(t *testing.T) {
	o := NewObject(0)
	for _, k := range []string{"b", "2", "a", "1", "01", "4294967294", "4294967295", "-1", "10", "b"} {
		o.Set(k, k)
	}
	got := strings.Join(o.Keys(), ",")
	want := "1,2,10,4294967294,b,a,01,4294967295,-1"
	if got != want {
		t.Errorf("keys = %s, want %s", got, want)
	}
	var zero Object
	zero.Set("x", 1.0)
	if zero.Len() != 1 {
		t.Error("zero Object is not usable")
	}
}

func TestEncodeJSONLikeJavaScript(t *testing.T) {
	obj := NewObject(0)
	obj.Set("s", "<>&\u2028\u2029é😀\"\\\b\f\n\r\t\x01\x1f\x7f")
	obj.Set("n", []any{math.Copysign(0, -1), 1e21, 1e-7, 100.0})
	obj.Set("2", nil)
	got, err := EncodeJSON(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"2":null,"s":"<>&` + "\u2028\u2029é😀" + `\"\\\b\f\n\r\t\u0001\u001f` + "\x7f" + `","n":[0,1e+21,1e-7,100]}`
	if string(got) != want {
		t.Errorf("EncodeJSON = %s\nwant          %s", got, want)
	}
	if _, err := EncodeJSON(math.Inf(1)); err == nil {
		t.Error("EncodeJSON(+Inf) succeeded")
	}
	if _, err := EncodeJSON(1); err == nil {
		t.Error("EncodeJSON(int) succeeded")
	}
	if got := Stringify("x"); got != "x" {
		t.Errorf("Stringify(x) = %s", got)
	}
	if got := RenderString(nil); got != "" {
		t.Errorf("RenderString(nil) = %q", got)
	}
	if got := RenderString([]any{nil, "a"}); got != `[null,"a"]` {
		t.Errorf("RenderString(array) = %q", got)
	}
	if got := Stringify(nil); got != "null" {
		t.Errorf("Stringify(nil) = %q", got)
	}
}

// compareStrings is a total order in UTF-16 code units, also on strings
// that are not valid UTF-8 (each invalid byte stands for U+FFFD, but two
// different invalid bytes must still compare one way only).
func TestCompareStrings(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"a", "b", -1},
		{"ab", "a", 1},
		{"", "", 0},
		{"～", "😀", 1}, // U+FF5E against the surrogate U+D83D
		{"\U0001F600", "\U0001F601", -1},
		{"\uE000", "\U00010000", 1},
		{"\xff", "\xfe", 1},
		{"\xed\xa0\x80", "\xed\xa0\x81", -1},
		{"x\xff", "x\xff", 0},
	}
	for _, tt := range tests {
		if got := compareStrings(tt.a, tt.b); got != tt.want {
			t.Errorf("compareStrings(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := compareStrings(tt.b, tt.a); got != -tt.want {
			t.Errorf("compareStrings(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}
