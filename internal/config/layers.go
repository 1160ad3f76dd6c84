package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// EnvPrefix starts every environment variable that sets a key.
const EnvPrefix = "TRAWL_"

// Load is the usual sequence for a main: defaults, then the file at path (if
// path is not empty), then the environment.
func Load(path string) (Config, error) {
	cfg := Default()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
		defer f.Close()
		if err := cfg.Parse(f, path); err != nil {
			return cfg, err
		}
	}
	if err := cfg.ApplyEnv(os.Environ()); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// Parse overlays the YAML document read from r onto c. Unknown keys and
// values of the wrong type are errors, all reported at once with their
// lines; name is used in messages (a file name).
func (c *Config) Parse(r io.Reader, name string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("config: reading %s: %w", name, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("config: %s: %w", name, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("config: %s:\n  %s", name, strings.Join(te.Errors, "\n  "))
		}
		return fmt.Errorf("config: %s: %w", name, err)
	}
	if len(root.Content) > 0 {
		c.recordOrigins(root.Content[0], "", name)
	}
	return nil
}

// recordOrigins remembers the file line of every key set by the document.
func (c *Config) recordOrigins(n *yaml.Node, prefix, name string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		c.setOrigin(path, fmt.Sprintf("%s:%d", name, k.Line))
		c.recordOrigins(v, path, name)
	}
}

func (c *Config) setOrigin(path, origin string) {
	if c.origins == nil {
		c.origins = map[string]string{}
	}
	c.origins[path] = origin
}

// Origin says where the value of path came from ("" for the default).
func (c *Config) Origin(path string) string { return c.origins[path] }

// ApplyEnv sets every key whose TRAWL_ variable is present in environ
// (os.Environ's form). Variables that name no key are errors, so a typo
// does not pass silently.
func (c *Config) ApplyEnv(environ []string) error {
	byEnv := map[string]string{}
	for _, p := range Keys() {
		byEnv[EnvName(p)] = p
	}
	var errs []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		path, known := byEnv[name]
		if !known {
			errs = append(errs, fmt.Sprintf("%s: no such configuration key", name))
			continue
		}
		if err := c.set(path, val, "env "+name); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("config: environment:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// EnvName is the environment variable for a key path.
func EnvName(path string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// Set sets the key at path from its string form, as a flag would: lists are
// comma-separated, maps are k=v pairs separated by commas.
func (c *Config) Set(path, value string) error {
	return c.set(path, value, "flag")
}

func (c *Config) set(path, value, origin string) error {
	f, err := field(reflect.ValueOf(c).Elem(), path)
	if err != nil {
		return err
	}
	if err := setValue(f, value); err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	c.setOrigin(path, origin)
	return nil
}

// Keys lists every leaf key path, in declaration order.
func Keys() []string {
	var out []string
	walk(reflect.TypeOf(Config{}), "", func(path string, _ reflect.Type) { out = append(out, path) })
	return out
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	textType     = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

func walk(t reflect.Type, prefix string, fn func(string, reflect.Type)) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			walk(f.Type, path, fn)
			continue
		}
		fn(path, f.Type)
	}
}

func field(v reflect.Value, path string) (reflect.Value, error) {
	for _, part := range strings.Split(path, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, fmt.Errorf("config: %s: no such key", path)
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if yamlName(v.Type().Field(i)) == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, fmt.Errorf("config: %s: no such key", path)
		}
	}
	if v.Kind() == reflect.Struct && v.Type() != durationType {
		return reflect.Value{}, fmt.Errorf("config: %s: is a section, not a key", path)
	}
	return v, nil
}

func setValue(f reflect.Value, s string) error {
	if f.CanAddr() && f.Addr().Type().Implements(textType) {
		return f.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	if f.Type() == durationType {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("invalid duration %q (want e.g. 500ms, 30s, 2m)", s)
		}
		f.SetInt(int64(d))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("invalid boolean %q", s)
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s), "_", ""), 10, 64)
		if err != nil {
			return fmt.Errorf("invalid integer %q", s)
		}
		f.SetInt(n)
	case reflect.Uint64:
		n, err := parseCount(s)
		if err != nil {
			return err
		}
		f.SetUint(n)
	case reflect.Float64:
		n, err := parseFloat(s)
		if err != nil {
			return err
		}
		f.SetFloat(n)
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("a list of %s entries: set it in the configuration file", f.Type().Elem().Name())
		}
		var items []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				items = append(items, p)
			}
		}
		f.Set(reflect.ValueOf(items))
	case reflect.Map:
		m := map[string]string{}
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				return fmt.Errorf("invalid entry %q (want key=value)", p)
			}
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		f.Set(reflect.ValueOf(m))
	default:
		return fmt.Errorf("unsupported type %s", f.Type())
	}
	return nil
}

// parseCount accepts 1000000000, 1_000_000_000 and 1e9.
func parseCount(s string) (uint64, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if n, err := strconv.ParseUint(t, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f > 1e19 || f != float64(uint64(f)) {
		return 0, fmt.Errorf("invalid count %q", s)
	}
	return uint64(f), nil
}

// parseFloat accepts decimals and fractions such as 1/64.
func parseFloat(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if num, den, ok := strings.Cut(t, "/"); ok {
		a, err1 := strconv.ParseFloat(strings.TrimSpace(num), 64)
		b, err2 := strconv.ParseFloat(strings.TrimSpace(den), 64)
		if err1 != nil || err2 != nil || b == 0 {
			return 0, fmt.Errorf("invalid number %q", s)
		}
		return a / b, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid number %q", s)
	}
	return f, nil
}
