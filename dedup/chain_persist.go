package dedup

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// subChunkKey is the key function of f's chunks and the bucket that holds
// them: bloom_fold under the generation for a folded filter, bloom_chain
// under its growth index for the others.
func (c *Chain) subChunkKey(f *Filter) (bucket string, key func(c int) []byte) {
	if f.folded {
		return BucketFold, foldChunkKey(c.foldGen)
	}
	return BucketChainChunks, chainChunkKey(f.gi)
}

// chainChunkKey is the key of chunk c of the sub-filter of growth index i.
func chainChunkKey(i int) func(c int) []byte {
	return func(c int) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, uint32(i)), uint64(c))
	}
}

// metaLocked describes the chain with each sub-filter's stored-chunk
// bitmap. The sub-filters' ckpt locks must be held.
func (c *Chain) metaLocked(subs []*Filter, stored [][]uint64) *chainMeta {
	m := &chainMeta{
		layout: c.cfg.Layout, hashVersion: HashVersion, chunkBytes: uint64(c.cfg.ChunkBytes),
		initial: c.cfg.Initial, fp: c.cfg.FP, growth: c.cfg.Growth, tightening: c.cfg.Tightening,
		budget: c.cfg.Fold,
	}
	if subs[0].folded {
		m.folded, m.gen = subs[0].gi+1, c.foldGen
	}
	for i, f := range subs {
		m.subs = append(m.subs, *f.metaLocked(stored[i]))
	}
	return m
}

// lockSubs takes every sub-filter's checkpoint lock and returns the unlock.
func lockSubs(subs []*Filter) func() {
	for _, f := range subs {
		f.ckpt.Lock()
	}
	return func() {
		for _, f := range subs {
			f.ckpt.Unlock()
		}
	}
}

// Checkpoint writes every sub-filter's chunks changed since the last
// committed checkpoint and the chain meta record into tx, and drops the
// journal. It takes effect only if tx commits, as Filter.Checkpoint.
func (c *Chain) Checkpoint(tx *bolt.Tx) (CheckpointStats, error) {
	_, st, err := c.checkpoint(tx, nil)
	return st, err
}

// CheckpointChunks is a part of a checkpoint too big for one transaction,
// as Filter.CheckpointChunks: at most maxBytes of the sub-filters' changed
// chunks and the chain meta record; it reports whether changed chunks
// remain, and drops the journal only when none do (in a round, see
// BeginCheckpoint, the chunks and journal records the round owes).
func (c *Chain) CheckpointChunks(tx *bolt.Tx, maxBytes int64) (more bool, st CheckpointStats, err error) {
	return c.checkpoint(tx, &chunkBudget{left: maxBytes})
}

// BeginCheckpoint begins a round, as Filter.BeginCheckpoint: its parts
// write every sub-filter's chunks changed until now (a sub-filter added
// during the round has none to write), and its last part truncates the
// journal up to the last record tx shows.
func (c *Chain) BeginCheckpoint(tx *bolt.Tx) error {
	if err := refuseMixed(tx, ModeScalable); err != nil {
		return err
	}
	c.ckpt.Lock()
	defer c.ckpt.Unlock()
	subs := *c.subs.Load()
	defer lockSubs(subs)()
	c.round = round{active: true, cut: journalSeq(tx)}
	for _, f := range subs {
		f.beginRoundLocked()
	}
	return nil
}

// checkpoint is Checkpoint, or with a budget CheckpointChunks.
func (c *Chain) checkpoint(tx *bolt.Tx, budget *chunkBudget) (more bool, _ CheckpointStats, _ error) {
	start := time.Now()
	if err := refuseMixed(tx, ModeScalable); err != nil {
		return false, CheckpointStats{}, err
	}
	c.ckpt.Lock()
	defer c.ckpt.Unlock()
	if err := c.settleLocked(tx); err != nil {
		return false, CheckpointStats{}, err
	}
	subs := *c.subs.Load()
	defer lockSubs(subs)()
	rd := c.round
	if budget == nil || !rd.active {
		c.round, rd = round{}, round{}
		for _, f := range subs {
			f.endRoundLocked()
		}
	}
	var st CheckpointStats
	writes := make([]chunkWrite, 0, len(subs))
	undo := func() {
		for i, w := range writes {
			w.undo(subs[i])
		}
	}
	for _, f := range subs {
		name, key := c.subChunkKey(f)
		bucket, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			undo()
			return false, CheckpointStats{}, fmt.Errorf("dedup: checkpoint: %w", err)
		}
		w, err := f.writeChunksLocked(bucket, key, &st, budget, rd.active)
		if err != nil {
			undo()
			return false, CheckpointStats{}, err
		}
		writes = append(writes, w)
	}
	stored := make([][]uint64, len(subs))
	for i, w := range writes {
		stored[i] = w.stored
	}
	if err := putChainMeta(tx, c.metaLocked(subs, stored)); err != nil {
		undo()
		return false, CheckpointStats{}, err
	}
	for _, f := range subs {
		if rd.active {
			more = more || f.todoLeft()
		} else {
			more = more || (budget != nil && f.anyDirty())
		}
	}
	if !more {
		if err := truncateJournal(tx, rd); err != nil {
			undo()
			return false, CheckpointStats{}, err
		}
		// The round is over (see Filter.checkpoint).
		c.round = round{}
		for _, f := range subs {
			f.endRoundLocked()
		}
	}
	if err := putCut(tx, MetaKeyChain); err != nil {
		undo()
		return false, CheckpointStats{}, err
	}
	for i, w := range writes {
		w.commitOnLocked(subs[i], tx)
	}
	st.Duration = time.Since(start)
	return more, st, nil
}

func putChainMeta(tx *bolt.Tx, m *chainMeta) error {
	b, err := tx.CreateBucketIfNotExists([]byte(BucketMeta))
	if err != nil {
		return fmt.Errorf("dedup: write chain meta: %w", err)
	}
	if err := b.Put([]byte(MetaKeyChain), m.encode()); err != nil {
		return fmt.Errorf("dedup: write chain meta: %w", err)
	}
	return nil
}

// AppendJournal records, inside tx, the hashes of keys admitted as new since
// the last checkpoint, as Filter.AppendJournal. The first call on a fresh
// file also writes the chain meta record.
func (c *Chain) AppendJournal(tx *bolt.Tx, hs []uint64) error {
	if len(hs) == 0 {
		return nil
	}
	if !hasMeta(tx, MetaKeyChain) {
		if err := refuseMixed(tx, ModeScalable); err != nil {
			return err
		}
		c.ckpt.Lock()
		if err := c.settleLocked(tx); err != nil {
			c.ckpt.Unlock()
			return err
		}
		subs := *c.subs.Load()
		unlock := lockSubs(subs)
		stored := make([][]uint64, len(subs))
		for i, f := range subs {
			stored[i] = f.ckpt.persisted
		}
		err := putChainMeta(tx, c.metaLocked(subs, stored))
		unlock()
		c.ckpt.Unlock()
		if err != nil {
			return err
		}
		return appendJournalCut(tx, hs, MetaKeyChain)
	}
	return appendJournal(tx, hs)
}
