package cli

import "testing"

func TestSetDispatch(t *testing.T) {
	s := NewSet("prog", "prog <command>")
	var got []string
	s.Register(Command{Name: "plan", Run: func(a []string) int { got = append([]string{"plan"}, a...); return 3 }})
	s.Register(Command{Name: "", Run: func(a []string) int { got = append([]string{"default"}, a...); return 4 }})

	tests := []struct {
		args []string
		want []string
		code int
	}{
		{[]string{"plan", "-x"}, []string{"plan", "-x"}, 3},
		{[]string{"https://example.com/"}, []string{"default", "https://example.com/"}, 4},
		{nil, []string{"default"}, 4},
	}
	for _, tt := range tests {
		got = nil
		code := s.Main(tt.args)
		if code != tt.code || len(got) != len(tt.want) {
			t.Fatalf("Main(%q) = %d, %q; want %d, %q", tt.args, code, got, tt.code, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Fatalf("Main(%q) ran %q; want %q", tt.args, got, tt.want)
			}
		}
	}
}

func TestSetNoDefault(t *testing.T) {
	s := NewSet("prog", "prog <command>")
	if code := s.Main([]string{"nope"}); code != ExitUsage {
		t.Fatalf("unknown command without default: exit %d, want %d", code, ExitUsage)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	s := NewSet("prog", "prog")
	s.Register(Command{Name: "a"})
	defer func() {
		if recover() == nil {
			t.Fatal("second Register of the same name did not panic")
		}
	}()
	s.Register(Command{Name: "a"})
}
