// Package doccheck holds a test that keeps the commands in README.md and
// docs/*.md true: every `go test` line names a package directory that
// exists, every -run, -bench and -fuzz pattern matches a test function in
// it, every test flag it passes is declared with package flag in that
// package, every --flag of a `crawler` or `frontier` command line (or of a
// flag named on its own, as in a table of flags) is defined in cmd/crawler
// or cmd/frontier, every repository file or package path they name exists,
// and every relative link reaches a file and, with a #, its heading.
//
// The package has no code of its own: it is this test. When a test,
// a flag or a package moves, the doc that names it fails here, in CI.
//
// # Caveats
//
// Flags are checked per program, not per sub-command: a flag of
// `frontier plan` named on a `frontier status` line passes. A pattern's
// top level is checked against Test, Fuzz, Example and Benchmark
// functions, whatever build tags their files carry; sub-test names
// (after the first "/") are not checked.
package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsCommandsExist checks README.md and docs/*.md as they are.
func TestDocsCommandsExist(t *testing.T) {
	root := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	c := newChecker(root)
	for _, path := range docs {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for _, p := range c.checkDoc(rel, string(text)) {
			t.Error(p)
		}
	}
	if c.commands == 0 {
		t.Fatal("no command found in the docs: the extraction is broken")
	}
}

// TestCheckerCatchesWrongNames feeds the checker one line at a time: each
// bad line must be reported, naming what is wrong, and each good one not.
func TestCheckerCatchesWrongNames(t *testing.T) {
	c := newChecker(repoRoot(t))
	tests := []struct {
		name string
		doc  string
		want string // a substring of a problem expected; "" for none
	}{
		{"good go test", "```sh\ngo test ./frontier/service -run 'TestKill9$' -args -soak\n```\n", ""},
		{"good inline go test", "run `go test ./dedup -run '^$' -bench\n'TestAndAddHashes$|Test$' -benchtime 3x`.\n", ""},
		{"good tagged bench", "`go test -tags scale ./frontier -run '^$' -bench Scale -scale.urls 20000000`", ""},
		{"good cd", "```sh\ncd bench && go test -run '^$' -bench Floor -benchtime 1x ./floor\n```\n", ""},
		{"good env and fuzz", "`TRAWL_SOAK=1 go test -run Soak ./internal/synthweb` and `go test -fuzz=FuzzDecode$ ./internal/msg`", ""},
		{"good crawler", "```sh\n./crawler --max-pages 200 --allow-private-networks https://example.com/   # a comment --nope\n```\n", ""},
		{"good frontier sub-command", "`frontier plan --capacity N --fp P [--layout paged|standard|blocked] [--json]`", ""},
		{"good flag in a table", "| `--max-inflight-per-host N` | `frontier.max_inflight_per_host` |", ""},
		{"good link", "[architecture](docs/architecture.md#overview)", ""},
		{"test in another package", "```sh\ngo test ./frontier -run TestKill9$ -soak\n```\n", `"TestKill9$"`},
		{"no such test", "`go test ./crawl -run TestNoSuchThing`", `"TestNoSuchThing"`},
		{"one alternative wrong", "`go test ./dedup -run '^$' -bench 'TestAndAddHashes$|NoSuchBench$'`", `"NoSuchBench$"`},
		{"no such package", "`go test ./frontier/nosuch -run TestKill9`", "frontier/nosuch"},
		{"undeclared test flag", "`go test ./frontier/service -run TestKill9$ -args -soakk`", "-soakk"},
		{"undeclared flag before -args", "`go test ./e2e -run Chaos -chaos.sed=3`", "-chaos.sed"},
		{"no such crawler flag", "```sh\ncrawler --max-page 200 https://example.com/\n```\n", "--max-page"},
		{"no such frontier flag", "`frontier check --datafile F`", "--datafile"},
		{"frontier flag on crawler", "`crawler --filter-max-memory 4GiB https://example.com/`", "--filter-max-memory"},
		{"no such flag in a table", "| `--max-inflight N` | x |", "--max-inflight"},
		{"fuzz pattern matching two", "`go test -fuzz=FuzzResolver ./parser`", "FuzzResolverSeen"},
		{"dead link", "see [limits](docs/nosuch.md)", "docs/nosuch.md"},
		{"good paths", "`frontier/service`, (frontier/service/kill_test.go), `./internal/testkit/...`, https://example.com/a/b.go, `crawler.fetch_log`", ""},
		{"moved file", "the layout is in frontier/nosuch.go, beside", "frontier/nosuch.go"},
		{"moved file in a block", "```\nsee deploy/prometheus/nosuch.yml\n```\n", "deploy/prometheus/nosuch.yml"},
		{"moved package", "package `fetcher/nosuch` holds", "fetcher/nosuch"},
		{"dead anchor", "see [tools](docs/tools.md#rebuilding-the-filter)", "#rebuilding-the-filter"},
		{"dead anchor in the same doc", "# A b\n[x](#a-c)", "#a-c"},
		{"good anchor in the same doc", "# A (b/c) d\n[x](#a-bc-d)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.checkDoc("README.md", tt.doc)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("problems in a good line:\n%s", strings.Join(got, "\n"))
			case tt.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }):
				t.Errorf("no problem names %s; got:\n%s", tt.want, strings.Join(got, "\n"))
			}
		})
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// checker knows the repository's flags and test functions. It reads a
// package's files the first time a doc names it.
type checker struct {
	root     string
	progs    map[string]map[string]bool // "crawler", "frontier" -> flag names
	anyTest  map[string]bool            // test flags declared anywhere
	pkgs     map[string]*pkgInfo        // directory relative to root -> contents
	commands int                        // commands checked, for the sanity check
}

type pkgInfo struct {
	funcs []string        // Test, Benchmark, Fuzz and Example functions
	flags map[string]bool // names declared with package flag (or a FlagSet)
}

// goTestFlags are the flags `go test` and package testing define: true
// for those that take a value when written without "=".
var goTestFlags = map[string]bool{
	"run": true, "bench": true, "benchtime": true, "count": true, "cpu": true,
	"timeout": true, "tags": true, "fuzz": true, "fuzztime": true, "fuzzminimizetime": true,
	"skip": true, "p": true, "parallel": true, "o": true, "exec": true, "list": true,
	"coverprofile": true, "cpuprofile": true, "memprofile": true, "blockprofile": true,
	"mutexprofile": true, "trace": true, "shuffle": true, "outputdir": true,
	"covermode": true, "coverpkg": true, "gcflags": true, "ldflags": true, "mod": true,
	"memprofilerate": true, "blockprofilerate": true, "mutexprofilefraction": true,
	"v": false, "race": false, "short": false, "failfast": false, "benchmem": false,
	"cover": false, "json": false, "x": false, "n": false, "a": false, "trimpath": false,
	"msan": false, "asan": false, "c": false, "i": false, "vet": true, "fullpath": false,
}

var (
	// flagDecl finds flag names declared with package flag or a FlagSet:
	// flag.Int("name", ...), fs.StringVar(&v, "name", ...).
	flagDecl = regexp.MustCompile(`\b(?:flag|fs)\.(Bool|BoolFunc|Duration|Float64|Func|Int|Int64|String|TextVar|Uint|Uint64|Var)(?:Var)?\(\s*(?:&?[\w.\[\]]+,\s*)?"([\w.-]+)"`)
	// flagTable finds {"name", "config.path", "usage"} rows of a table
	// of flags that override one configuration key each.
	flagTable = regexp.MustCompile(`\{\s*"([a-z][\w-]*)",\s*"[a-z_]+(?:\.[a-z_]+)*",\s*[` + "`" + `"]`)
	testFunc  = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	codeSpan  = regexp.MustCompile("`([^`]+)`")
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	// filePath finds a repository file named in prose or code:
	// frontier/service/kill_test.go, deploy/prometheus/alerts.yml.
	filePath = regexp.MustCompile(`(?:^|[\s("` + "`" + `])((?:[a-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.(?:go|yaml|yml|sh|json|conf|md))\b`)
	// dirSpan is a code span that is only a path: `frontier/service`.
	dirSpan = regexp.MustCompile(`^(?:\./)?([a-z0-9_-]+(?:/[a-z0-9_.-]+)+?)(?:/\.\.\.)?/?$`)
)

func newChecker(root string) *checker {
	c := &checker{
		root:    root,
		progs:   map[string]map[string]bool{},
		anyTest: map[string]bool{},
		pkgs:    map[string]*pkgInfo{},
	}
	for _, prog := range []string{"crawler", "frontier"} {
		names := map[string]bool{"h": true, "help": true}
		files, _ := filepath.Glob(filepath.Join(root, "cmd", prog, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, m := range flagDecl.FindAllStringSubmatch(string(src), -1) {
				names[m[2]] = true
			}
			for _, m := range flagTable.FindAllStringSubmatch(string(src), -1) {
				names[m[1]] = true
			}
		}
		c.progs[prog] = names
	}
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			if src, err := os.ReadFile(path); err == nil {
				for _, m := range flagDecl.FindAllStringSubmatch(string(src), -1) {
					c.anyTest[m[2]] = true
				}
			}
		}
		return nil
	})
	return c
}

// pkg returns what the directory dir (relative to root) holds, or nil
// when it holds no Go file.
func (c *checker) pkg(dir string) *pkgInfo {
	dir = filepath.Clean(dir)
	if p, ok := c.pkgs[dir]; ok {
		return p
	}
	files, _ := filepath.Glob(filepath.Join(c.root, dir, "*.go"))
	var p *pkgInfo
	if len(files) > 0 {
		p = &pkgInfo{flags: map[string]bool{}}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if strings.HasSuffix(f, "_test.go") {
				for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
					p.funcs = append(p.funcs, m[1])
				}
			}
			for _, m := range flagDecl.FindAllStringSubmatch(string(src), -1) {
				p.flags[m[2]] = true
			}
		}
	}
	c.pkgs[dir] = p
	return p
}

// checkDoc returns the problems of one markdown document, each as
// "file:line: what".
func (c *checker) checkDoc(name, text string) []string {
	var probs []string
	report := func(line int, format string, args ...any) {
		probs = append(probs, fmt.Sprintf("%s:%d: ", name, line)+fmt.Sprintf(format, args...))
	}
	lines := strings.Split(text, "\n")
	// Prose (outside fenced blocks) keeps its line count, with the fenced
	// lines blanked, so a code span's offset gives its line.
	prose := make([]string, len(lines))
	fence, lang := "", ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimSpace(l)
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence, lang = trimmed[:3], strings.TrimSpace(trimmed[3:])
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
				continue
			}
			if lang == "" || lang == "sh" || lang == "bash" || lang == "console" || lang == "shell" {
				start := i
				for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
					i++
					l = strings.TrimSuffix(l, "\\") + " " + lines[i]
				}
				c.checkSnippet(start+1, l, true, report)
			}
			continue
		}
		prose[i] = l
	}
	joined := strings.Join(prose, "\n")
	for _, m := range codeSpan.FindAllStringSubmatchIndex(joined, -1) {
		line := strings.Count(joined[:m[0]], "\n") + 1
		span := strings.ReplaceAll(joined[m[2]:m[3]], "\n", " ")
		c.checkSnippet(line, span, false, report)
	}
	// Paths into the repository, in the whole text (code blocks too), so
	// that a file or package that moves fails its docs.
	for _, m := range filePath.FindAllStringSubmatchIndex(text, -1) {
		c.checkPath(name, strings.Count(text[:m[2]], "\n")+1, text[m[2]:m[3]], report)
	}
	for _, m := range codeSpan.FindAllStringSubmatchIndex(joined, -1) {
		if d := dirSpan.FindStringSubmatch(joined[m[2]:m[3]]); d != nil {
			c.checkPath(name, strings.Count(joined[:m[0]], "\n")+1, d[1], report)
		}
	}
	for _, m := range mdLink.FindAllStringSubmatchIndex(joined, -1) {
		link := joined[m[2]:m[3]]
		if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
			continue
		}
		line := strings.Count(joined[:m[0]], "\n") + 1
		target, anchor, _ := strings.Cut(link, "#")
		var doc string
		if target == "" {
			doc = text
		} else {
			path := filepath.Join(c.root, filepath.Dir(name), target)
			fi, err := os.Stat(path)
			if err != nil {
				report(line, "link to %s: no such file", target)
				continue
			}
			if fi.IsDir() || !strings.HasSuffix(target, ".md") {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				report(line, "link to %s: %v", target, err)
				continue
			}
			doc = string(b)
		}
		if anchor != "" && !slices.Contains(headingAnchors(doc), anchor) {
			report(line, "link to %s: no heading #%s", link, anchor)
		}
	}
	return probs
}

// checkPath reports path when it starts with one of the repository's
// top-level directories (or a directory of the docs' own) and names
// nothing, relative to the root or to the doc.
func (c *checker) checkPath(doc string, line int, path string, report reportFunc) {
	first, _, _ := strings.Cut(path, "/")
	if fi, err := os.Stat(filepath.Join(c.root, first)); err != nil || !fi.IsDir() || strings.HasPrefix(first, ".") {
		if fi, err := os.Stat(filepath.Join(c.root, filepath.Dir(doc), first)); err != nil || !fi.IsDir() {
			return // not a path into the repository (a URL's path, a config key)
		}
	}
	for _, p := range []string{filepath.Join(c.root, path), filepath.Join(c.root, filepath.Dir(doc), path)} {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	report(line, "%s: no such file or directory", path)
}

// headingAnchors returns the anchors GitHub gives a document's headings:
// lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(doc string) []string {
	var anchors []string
	inFence := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ' || r == '-':
				b.WriteByte('-')
			case r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127:
				b.WriteRune(r)
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

type reportFunc func(line int, format string, args ...any)

// checkSnippet checks one shell line (a fenced block's line, or a code
// span). Comments count only in fenced blocks, where "#" starts one.
func (c *checker) checkSnippet(line int, s string, fenced bool, report reportFunc) {
	cwd := "."
	for _, cmd := range splitCommands(s, fenced) {
		for len(cmd) > 0 && (cmd[0] == "$" || envAssign.MatchString(cmd[0])) {
			cmd = cmd[1:]
		}
		if len(cmd) > 0 && (cmd[0] == "time" || cmd[0] == "/usr/bin/time") {
			cmd = cmd[1:]
			for len(cmd) > 0 && strings.HasPrefix(cmd[0], "-") {
				cmd = cmd[1:]
			}
		}
		if len(cmd) == 0 {
			continue
		}
		switch prog := filepath.Base(cmd[0]); {
		case cmd[0] == "cd" && len(cmd) > 1:
			cwd = filepath.Join(cwd, cmd[1])
		case cmd[0] == "go" && len(cmd) > 2 && cmd[1] == "test":
			c.commands++
			c.checkGoTest(line, cwd, cmd[2:], report)
		case cmd[0] == "go" && len(cmd) > 2 && cmd[1] == "run" && strings.HasPrefix(cmd[2], "./cmd/"):
			c.commands++
			c.checkProgram(line, filepath.Base(cmd[2]), cmd[3:], report)
		case prog == "crawler" || prog == "frontier":
			c.commands++
			c.checkProgram(line, prog, cmd[1:], report)
		case strings.HasPrefix(cmd[0], "-") && !fenced:
			// A flag named on its own (`--workers N`, `-scale.fill F`).
			c.commands++
			c.checkLoneFlags(line, cmd, report)
		}
	}
}

// checkProgram checks every -flag of a crawler or frontier command line.
func (c *checker) checkProgram(line int, prog string, args []string, report reportFunc) {
	known := c.progs[prog]
	for _, a := range args {
		name, ok := flagName(a)
		if ok && !known[name] {
			report(line, "%s %s: cmd/%s defines no flag %q", prog, a, prog, name)
		}
	}
}

// checkLoneFlags checks a code span that starts with a flag: a --flag
// must be one of the programs'; a -flag may also be a test flag.
func (c *checker) checkLoneFlags(line int, args []string, report reportFunc) {
	for _, a := range args {
		name, ok := flagName(a)
		if !ok {
			continue
		}
		if c.progs["crawler"][name] || c.progs["frontier"][name] {
			continue
		}
		if !strings.HasPrefix(a, "--") {
			if _, isGo := goTestFlags[strings.TrimPrefix(name, "test.")]; isGo || c.anyTest[name] {
				continue
			}
		}
		report(line, "%s: neither cmd/crawler nor cmd/frontier defines it, nor any test", a)
	}
}

// flagName returns the name of a -flag or --flag=value argument.
func flagName(arg string) (string, bool) {
	if !strings.HasPrefix(arg, "-") || arg == "-" || arg == "--" {
		return "", false
	}
	name := strings.TrimLeft(arg, "-")
	name, _, _ = strings.Cut(name, "=")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return "", false // -1, a number, or a placeholder
	}
	return name, true
}

// checkGoTest checks the arguments of one `go test` command run in cwd.
func (c *checker) checkGoTest(line int, cwd string, args []string, report reportFunc) {
	var pkgs []string
	type pattern struct{ flag, value string }
	var patterns []pattern
	var custom []string // flags for the test binary
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" {
			for _, b := range args[i+1:] {
				if _, ok := flagName(b); ok {
					custom = append(custom, b)
				}
			}
			break
		}
		name, ok := flagName(a)
		if !ok {
			if a == "." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") {
				pkgs = append(pkgs, a)
			}
			continue
		}
		value, hasValue := "", strings.Contains(a, "=")
		if hasValue {
			_, value, _ = strings.Cut(a, "=")
		}
		takesValue, isGo := goTestFlags[strings.TrimPrefix(name, "test.")]
		if !isGo {
			custom = append(custom, a)
			// A custom flag's value, if one follows that is not a package.
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasPrefix(args[i+1], "./") {
				i++
			}
			continue
		}
		if takesValue && !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		switch strings.TrimPrefix(name, "test.") {
		case "run", "bench", "fuzz":
			patterns = append(patterns, pattern{name, value})
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	cmdline := "go test " + strings.Join(args, " ")
	var infos []*pkgInfo
	for _, p := range pkgs {
		dir := filepath.Join(cwd, p)
		if rest, ok := strings.CutSuffix(dir, "..."); ok {
			// A pattern of packages: its names are those of any of them.
			merged := &pkgInfo{flags: map[string]bool{}}
			_ = filepath.WalkDir(filepath.Join(c.root, rest), func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					rel, _ := filepath.Rel(c.root, path)
					if info := c.pkg(rel); info != nil {
						merged.funcs = append(merged.funcs, info.funcs...)
						for f := range info.flags {
							merged.flags[f] = true
						}
					}
				}
				return nil
			})
			infos = append(infos, merged)
			continue
		}
		info := c.pkg(dir)
		if info == nil {
			report(line, "%s: no Go package in %s", cmdline, dir)
			continue
		}
		infos = append(infos, info)
	}
	if len(infos) < len(pkgs) {
		return
	}
	for _, pt := range patterns {
		for _, alt := range topAlternatives(pt.value) {
			re, err := regexp.Compile(alt)
			if err != nil {
				report(line, "%s: -%s %q does not compile: %v", cmdline, pt.flag, alt, err)
				continue
			}
			if re.MatchString("") {
				continue // ^$, ".*": on purpose, none or all
			}
			prefixes := map[string][]string{"run": {"Test", "Fuzz", "Example"}, "bench": {"Benchmark"}, "fuzz": {"Fuzz"}}[strings.TrimPrefix(pt.flag, "test.")]
			var matched []string
			for _, info := range infos {
				for _, f := range info.funcs {
					if hasAnyPrefix(f, prefixes) && re.MatchString(f) {
						matched = append(matched, f)
					}
				}
			}
			switch {
			case len(matched) == 0:
				report(line, "%s: no %s func in %s matches -%s %q", cmdline, strings.Join(prefixes, "/"), strings.Join(pkgs, " "), pt.flag, alt)
			case strings.TrimPrefix(pt.flag, "test.") == "fuzz" && len(matched) > 1:
				// go test fuzzes one target: it refuses a pattern matching more.
				report(line, "%s: -fuzz %q matches %d fuzz tests (%s); go test fuzzes exactly one", cmdline, alt, len(matched), strings.Join(matched, ", "))
			}
		}
	}
	for _, a := range custom {
		name, _ := flagName(a)
		for i, info := range infos {
			if !info.flags[name] {
				report(line, "%s: %s declares no test flag %s", cmdline, pkgs[i], a)
			}
		}
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// topAlternatives returns the alternatives of a -run or -bench pattern's
// top level: the part before its first "/" outside brackets and
// parentheses, split at "|" outside them, as the testing package
// matches a name level by level.
func topAlternatives(pattern string) []string {
	var alts []string
	depth, start := 0, 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '/':
			if depth == 0 {
				return append(alts, pattern[start:i])
			}
		case '|':
			if depth == 0 {
				alts = append(alts, pattern[start:i])
				start = i + 1
			}
		}
	}
	return append(alts, pattern[start:])
}

// splitCommands splits a shell line into commands (at &&, ||, ;, & and
// a "|" with a space on either side) and each command into words, with
// quotes removed. In a fenced block a word starting with "#" ends the
// line. Brackets around an optional part ("[--json]") are dropped.
func splitCommands(s string, fenced bool) [][]string {
	var cmds [][]string
	var cmd []string
	var word strings.Builder
	inWord, quoted := false, false
	endWord := func() {
		if inWord {
			w := word.String()
			if !quoted {
				w = strings.TrimLeft(w, "[")
				if !strings.Contains(w, "[") {
					w = strings.TrimRight(w, "]")
				}
			}
			if w != "" {
				cmd = append(cmd, w)
			}
		}
		word.Reset()
		inWord, quoted = false, false
	}
	endCmd := func() {
		endWord()
		if len(cmd) > 0 {
			cmds = append(cmds, cmd)
		}
		cmd = nil
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\'' || ch == '"':
			j := strings.IndexByte(s[i+1:], ch)
			if j < 0 {
				j = len(s) - i - 1
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord, quoted = true, true
			i += j + 1
		case ch == ' ' || ch == '\t':
			endWord()
		case ch == '#' && fenced && !inWord:
			endCmd()
			return cmds
		case ch == ';':
			endCmd()
		case ch == '&' || ch == '|':
			if i+1 < len(s) && s[i+1] == ch {
				endCmd()
				i++
			} else if ch == '&' || !inWord || (i+1 < len(s) && s[i+1] == ' ') {
				endCmd()
			} else {
				word.WriteByte(ch)
			}
		case (ch == '<' || ch == '>') && !inWord && i+1 < len(s) && s[i+1] == ' ':
			// A redirection: drop its target.
			endWord()
			for i+1 < len(s) && s[i+1] == ' ' {
				i++
			}
			for i+1 < len(s) && s[i+1] != ' ' {
				i++
			}
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	endCmd()
	return cmds
}
