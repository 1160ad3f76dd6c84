package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes written with an optional unit: 512, 64KiB,
// 10MiB, 1GiB, or the decimal kB, MB, GB.
type ByteSize int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseByteSize parses s.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 || n*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("config: invalid size %q (want e.g. 512, 64KiB, 10MiB, 1GiB)", s)
	}
	return ByteSize(n * float64(mult)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (YAML, env, flags).
func (b *ByteSize) UnmarshalText(p []byte) error {
	v, err := ParseByteSize(string(p))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText writes the size with the largest binary unit that divides it.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

func (b ByteSize) String() string {
	for _, u := range []struct {
		s string
		m int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.m == 0 {
			return strconv.FormatInt(int64(b)/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(int64(b), 10)
}
