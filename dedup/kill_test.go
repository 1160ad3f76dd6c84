package dedup

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The kill -9 test: a child process (this test binary, re-executed) admits
// keys, journals them and checkpoints, printing "lo hi" after each commit;
// the parent SIGKILLs it at a random moment, reopens the file and checks
// that every key of every reported commit is present, and that each
// counts once in the item count. Four rounds run on
// the same file, each child resuming from what the previous one left. The
// scalable filter starts small so that it grows during the rounds; its last
// two rounds are killed right after a commit that grew the chain since the
// last checkpoint, so the journal holds keys of a sub-filter that no
// checkpoint has seen. In the rounds variants the child checkpoints in
// rounds instead (BeginCheckpoint, then a part of ten chunks after each
// later commit, in a transaction of its own), so the kills land between
// parts with keys journaled since the round began. In the fold variants
// (by growth index, and -budget sized by budget) the chain child also
// keeps every journaled hash in a bucket of its own (as the frontier keeps
// its keys) and folds the chain whenever FoldAdvised says, one WriteChunks
// part of two chunks after each commit and Commit after the last, so the
// kills land at every stage of a fold.

const (
	killEnvDB    = "DEDUP_KILL_DB"
	killEnvStart = "DEDUP_KILL_START"
	killEnvMode  = "DEDUP_KILL_MODE"
	killEnvRound = "DEDUP_KILL_ROUNDS"
	killBatch    = 200
	killHeld     = "held" // the fold child's key hashes
)

// killSizing is the sizing of the child's filter: New's, at DefaultLayout.
func killSizing() Sizing { s, _ := PlanLayout(500_000, 0.01, DefaultLayout); return s }

// killChainConfig is the child's chain; the budget variant's is sized
// by budget (ChainConfig.Fold).
func killChainConfig(mode string) ChainConfig {
	return ChainConfig{Initial: 1000, FP: 0.01, Growth: 1.25, ChunkBytes: 4096, Fold: strings.HasSuffix(mode, "-budget")}
}

// killFilter is what the kill test needs of either kind of filter.
type killFilter interface {
	TestAndAddHashes(hs []uint64, seen []bool)
	Test(key []byte) bool
	AppendJournal(tx *bolt.Tx, hs []uint64) error
	Checkpoint(tx *bolt.Tx) (CheckpointStats, error)
	BeginCheckpoint(tx *bolt.Tx) error
	CheckpointChunks(tx *bolt.Tx, maxBytes int64) (bool, CheckpointStats, error)
	Stats() Stats
	Close() error
}

var (
	_ killFilter = (*Filter)(nil)
	_ killFilter = (*Chain)(nil)
)

// loadKill loads the filter of mode from tx.
func loadKill(tx *bolt.Tx, mode string) (killFilter, error) {
	if strings.HasPrefix(mode, "scalable") {
		return LoadChain(tx, killChainConfig(mode))
	}
	return Load(tx, killSizing())
}

func keyID(id int) []byte { return strconv.AppendInt([]byte("https://kill.example/"), int64(id), 10) }

func TestKill9Recovery(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for _, mode := range []string{"fixed", "scalable"} {
		t.Run(mode, func(t *testing.T) { testKill9(t, mode, false) })
		t.Run(mode+"-rounds", func(t *testing.T) { testKill9(t, mode, true) })
	}
	t.Run("scalable-fold", func(t *testing.T) { testKill9(t, "scalable-fold", false) })
	t.Run("scalable-fold-budget", func(t *testing.T) { testKill9(t, "scalable-fold-budget", false) })
}

func testKill9(t *testing.T, mode string, rounds bool) {
	path := filepath.Join(t.TempDir(), "kill.db")
	var committed [][2]int
	// Keys the child's filter called seen were never added or journaled: a
	// reloaded chain, whose sub-filters may begin at other keys than before
	// the crash, need not call them seen again (a fixed filter reloads the
	// same bits, so it does).
	skipped := map[int]bool{}
	var want uint64 // keys the child journaled in the commits it reported
	totalFolds := 0
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.v=false")
		cmd.Env = append(os.Environ(), killEnvDB+"="+path, killEnvStart+"="+strconv.Itoa(round*10_000_000), killEnvMode+"="+mode, killEnvRound+"="+strconv.FormatBool(rounds))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		killAfter := 5 + rand.IntN(60)
		afterGrowth := mode == "scalable" && round >= 2
		folds := 0
		lines, grownLines := 0, 0
		for sc.Scan() {
			var lo, hi, grown int
			var seenIDs string
			if strings.HasPrefix(sc.Text(), "folded") {
				folds++
				continue
			}
			if _, err := fmt.Sscanf(sc.Text(), "%d %d %d %s", &lo, &hi, &grown, &seenIDs); err != nil {
				continue // a line cut short by the kill
			}
			committed = append(committed, [2]int{lo, hi})
			seenList := strings.Split(seenIDs, ",")[1:]
			for _, id := range seenList {
				n, _ := strconv.Atoi(id)
				skipped[n] = true
			}
			want += uint64(hi - lo - len(seenList))
			lines++
			grownLines += grown
			if (!afterGrowth && lines == killAfter) || (afterGrowth && grown == 1 && grownLines == 1) {
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v after %d commits, want killed", round, err, lines)
		}
		db, err := bolt.Open(path, 0o600, BoltOptions())
		if err != nil {
			t.Fatal(err)
		}
		if afterGrowth && grownLines == 0 {
			t.Fatalf("round %d: the chain never grew past a checkpoint", round)
		}
		var f killFilter
		err = db.View(func(tx *bolt.Tx) (err error) { f, err = loadKill(tx, mode); return err })
		db.Close()
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		checked := 0
		for _, r := range committed {
			for id := r[0]; id < r[1]; id++ {
				if mode != "fixed" && skipped[id] {
					continue
				}
				if !f.Test(keyID(id)) {
					t.Fatalf("round %d: key %d was committed but is missing after kill -9", round, id)
				}
				checked++
			}
		}
		// Each journaled key counts once, however the kill cut the
		// checkpoint's parts; a commit the child made but did not report
		// (one a round at most) adds a batch.
		totalFolds += folds
		least := want
		if strings.HasPrefix(mode, "scalable-fold") {
			// A folded filter counts the fed keys it found new: a key it
			// called seen (its false positives) is not counted again.
			least = want - want/50
		}
		if items, most := f.Stats().Items, want+uint64(killBatch*(round+1)); items < least || items > most {
			t.Errorf("round %d: %d items after kill -9, want %d to %d", round, items, want, most)
		}
		t.Logf("round %d: killed after %d commits and %d folds; %d committed keys present, %d items, %d sub-filters", round, lines, folds, checked, f.Stats().Items, len(f.Stats().Subfilters))
		f.Close()
	}
	if strings.HasPrefix(mode, "scalable-fold") && totalFolds == 0 {
		t.Error("no fold committed in any round")
	}
}

// TestKill9Child is the child of TestKill9Recovery; it does nothing unless
// started by it.
func TestKill9Child(t *testing.T) {
	path := os.Getenv(killEnvDB)
	if path == "" {
		t.Skip("only runs as the child of TestKill9Recovery")
	}
	start, _ := strconv.Atoi(os.Getenv(killEnvStart))
	db, err := bolt.Open(path, 0o600, BoltOptions())
	if err != nil {
		t.Fatal(err)
	}
	mode := os.Getenv(killEnvMode)
	var f killFilter
	err = db.View(func(tx *bolt.Tx) (err error) { f, err = loadKill(tx, mode); return err })
	if errors.Is(err, ErrNotFound) {
		if mode != "fixed" {
			f, err = NewChain(killChainConfig(mode))
		} else {
			f, err = New(500_000, 0.01, WithChunkBytes(4096))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	hs := make([]uint64, killBatch)
	seen := make([]bool, killBatch)
	subs := len(f.Stats().Subfilters) // sub-filters as of the last checkpoint
	rounds, inRound, roundSubs := os.Getenv(killEnvRound) == "true", false, 0
	var fd *Fold // the fold child's fold under way
	for i := 0; i < 100_000; i++ {
		lo := start + i*killBatch
		for j := range hs {
			hs[j] = Hash(keyID(lo + j))
		}
		f.TestAndAddHashes(hs, seen)
		var fresh []uint64
		seenIDs := "-"
		for j, h := range hs {
			if !seen[j] {
				fresh = append(fresh, h)
			} else {
				seenIDs += "," + strconv.Itoa(lo+j)
			}
		}
		ckpt := i%5 == 4 && !rounds
		err := db.Update(func(tx *bolt.Tx) error {
			if err := f.AppendJournal(tx, fresh); err != nil {
				return err
			}
			if strings.HasPrefix(mode, "scalable-fold") {
				if err := putHeld(tx, fresh); err != nil {
					return err
				}
			}
			if ckpt {
				_, err := f.Checkpoint(tx)
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if rounds && !inRound && i%5 == 4 {
			if err := db.View(f.BeginCheckpoint); err != nil {
				t.Fatal(err)
			}
			inRound, roundSubs = true, len(f.Stats().Subfilters)
		} else if inRound {
			// One part of the round, after a commit journaled keys it
			// does not cover.
			err := db.Update(func(tx *bolt.Tx) (err error) {
				inRound, _, err = f.CheckpointChunks(tx, 10*4096)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			ckpt = !inRound
		}
		grown := 0
		if n := len(f.Stats().Subfilters); ckpt && rounds {
			subs = roundSubs // a sub-filter added during the round has no chunk written
		} else if ckpt {
			subs = n
		} else if n > subs {
			grown = 1 // this commit journaled keys of a sub-filter no checkpoint saw
		}
		fmt.Printf("%d %d %d %s\n", lo, lo+killBatch, grown, seenIDs)
		if strings.HasPrefix(mode, "scalable-fold") {
			if fd, err = killFoldStep(db, f.(*Chain), fd); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// putHeld records hs in the fold child's bucket of key hashes.
func putHeld(tx *bolt.Tx, hs []uint64) error {
	b, err := tx.CreateBucketIfNotExists([]byte(killHeld))
	if err != nil {
		return err
	}
	for _, h := range hs {
		if err := b.Put(binary.BigEndian.AppendUint64(nil, h), nil); err != nil {
			return err
		}
	}
	return nil
}

// killFoldStep takes the fold child's fold one step: begins one (feeding
// it every held hash) when the chain advises it, writes a part of two
// chunks, or commits, each in a transaction of its own. It returns the
// fold still under way.
func killFoldStep(db *bolt.DB, c *Chain, fd *Fold) (*Fold, error) {
	if fd == nil {
		if !c.FoldAdvised() {
			return nil, nil
		}
		fd, err := c.BeginFold()
		if err != nil {
			return nil, err
		}
		err = db.View(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(killHeld)).ForEach(func(k, _ []byte) error {
				return fd.Add([]uint64{binary.BigEndian.Uint64(k)})
			})
		})
		return fd, err
	}
	var more bool
	err := db.Update(func(tx *bolt.Tx) (err error) { more, err = fd.WriteChunks(tx, 2*4096); return err })
	if err != nil || more {
		return fd, err
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := fd.Commit(tx); return err }); err != nil {
		return fd, err
	}
	fmt.Println("folded")
	return nil, nil
}
