package bus

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Users holds the password of each role's user on an embedded server.
type Users map[Role]string

// UsersVersion is the version of the users file's layout.
//
// Layout (JSON, mode 0600, in the crawl's data_dir):
//
//	{"version": 1, "frontier": "<password>", "crawler": "<password>", "seeder": "<password>"}
//
// Every role of Roles has a password of 16 to 128 letters, digits, '-'
// or '_' (generated ones are 32 hex digits: 128 random bits), so that a
// password fits in a nats://user:password@host URL as it is.
const UsersVersion = 1

var passwordChars = regexp.MustCompile(`^[A-Za-z0-9_-]{16,128}$`)

// ErrUsersFile wraps every reason a users file is refused.
var ErrUsersFile = errors.New("bus: users file")

// LoadOrCreateUsers returns the users in the file at path, creating the
// file with fresh random passwords (mode 0600, written to a temporary file
// and renamed, so a crash leaves the old file or none) when there is none.
// A file that others may read (any group or other permission bit) or that
// does not parse is refused and left as it is.
func LoadOrCreateUsers(path string) (Users, error) {
	u, err := ReadUsers(path)
	if !errors.Is(err, os.ErrNotExist) {
		return u, err
	}
	u = Users{}
	for _, r := range Roles {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("bus: generating a password: %w", err)
		}
		u[r] = hex.EncodeToString(b)
	}
	return u, writeUsers(path, u)
}

// ReadUsers reads the users file at path (see UsersVersion for its
// layout). An absent file is an error wrapping os.ErrNotExist.
func ReadUsers(path string) (Users, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w %s: other users may read it (mode %04o): chmod 600 it", ErrUsersFile, path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	u, err := ParseUsers(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return u, nil
}

// ParseUsers decodes a users file's bytes.
func ParseUsers(b []byte) (Users, error) {
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsersFile, err)
	}
	if v, ok := f["version"].(float64); !ok || v != UsersVersion {
		return nil, fmt.Errorf("%w: version %v, want %d", ErrUsersFile, f["version"], UsersVersion)
	}
	u := Users{}
	for _, r := range Roles {
		p, _ := f[string(r)].(string)
		if !passwordChars.MatchString(p) {
			return nil, fmt.Errorf("%w: %s: want a password of 16 to 128 letters, digits, '-' or '_'", ErrUsersFile, r)
		}
		u[r] = p
	}
	return u, nil
}

func writeUsers(path string, u Users) error {
	f := map[string]any{"version": UsersVersion}
	for r, p := range u {
		f[string(r)] = p
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("bus: users file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*") // mode 0600
	if err != nil {
		return fmt.Errorf("bus: users file: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("bus: users file: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
