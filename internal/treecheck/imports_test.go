// Package treecheck holds tests of the source tree's own conventions,
// checked over every Go file so that the next file that breaks one fails
// CI instead of waiting for a review.
package treecheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/trawlhq/trawl"

// importClass orders the import groups: the standard library, then third
// party modules, then trawl's own packages.
func importClass(path string) int {
	switch {
	case path == module || strings.HasPrefix(path, module+"/"):
		return 2
	case strings.Contains(strings.SplitN(path, "/", 2)[0], "."):
		return 1
	}
	return 0
}

var classNames = [...]string{"standard library", "third party", "trawl"}

// importGroupProblems reports where src's import block breaks the rule:
// groups separated by blank lines, each of one class, in class order.
func importGroupProblems(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var problems []string
	lastLine, lastClass, groupClass := -1, -1, -1
	for _, is := range f.Imports {
		path := strings.Trim(is.Path.Value, `"`)
		c := importClass(path)
		line := fset.Position(is.Pos()).Line
		if is.Doc != nil {
			line = fset.Position(is.Doc.Pos()).Line
		}
		newGroup := lastLine < 0 || line > lastLine+1
		switch {
		case newGroup && c <= lastClass:
			problems = append(problems, name+": "+path+" starts a second "+classNames[c]+" group or one out of order")
		case !newGroup && c != groupClass:
			problems = append(problems, name+": "+path+" ("+classNames[c]+") shares a group with "+classNames[groupClass]+" imports")
		}
		if newGroup {
			groupClass = c
		}
		lastLine, lastClass = fset.Position(is.End()).Line, max(lastClass, c)
	}
	return problems, nil
}

// TestImportGroups holds every Go file of the repository, the bench
// module's too, to the import groups of shared/STYLE.md: standard
// library, third party, trawl.
func TestImportGroups(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if base := d.Name(); p != root && (strings.HasPrefix(base, ".") || base == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		problems, err := importGroupProblems(p, src)
		if err != nil {
			return err
		}
		for _, pr := range problems {
			t.Error(pr)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("checked %d Go files; the walk did not find the tree", n)
	}
}

// TestImportGroupsCatchesMistakes feeds the checker blocks that break
// the rule, and ones that keep it.
func TestImportGroupsCatchesMistakes(t *testing.T) {
	cases := []struct {
		name, imports string
		bad           bool
	}{
		{"ordered", "\"fmt\"\n\n\"golang.org/x/net/html\"\n\n\"github.com/trawlhq/trawl/dedup\"", false},
		{"std only", "\"fmt\"\n\"os\"", false},
		{"with a comment", "\"fmt\"\n\n// why\n\"github.com/trawlhq/trawl/dedup\"", false},
		{"trawl in std", "\"fmt\"\n\"github.com/trawlhq/trawl/dedup\"", true},
		{"third party with trawl", "\"fmt\"\n\n\"golang.org/x/net/html\"\n\"github.com/trawlhq/trawl/dedup\"", true},
		{"out of order", "\"github.com/trawlhq/trawl/dedup\"\n\n\"fmt\"", true},
		{"std split", "\"fmt\"\n\n\"golang.org/x/net/html\"\n\n\"os\"", true},
	}
	for _, c := range cases {
		src := "package p\n\nimport (\n" + c.imports + "\n)\n"
		problems, err := importGroupProblems(c.name+".go", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := len(problems) > 0; got != c.bad {
			t.Errorf("%s: problems %v, want bad=%v", c.name, problems, c.bad)
		}
	}
}
