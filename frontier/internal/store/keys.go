package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/trawlhq/trawl/dedup"
)

// URLHash is the hash a URL is known by: dedup's key hash of it, which
// keys the URL in `done` and `truth` (as U64Key) and in the filter.
func URLHash(url string) uint64 { return dedup.Hash([]byte(url)) }

// QueueKey is host + 0x00 + seq. Keys and values handed to bbolt's Put
// must stay untouched until the transaction ends, so every record and key
// is freshly allocated.
func QueueKey(host string, seq uint64) []byte {
	return appendQueueKey(make([]byte, 0, len(host)+9), host, seq)
}

// appendQueueKey appends QueueKey(host, seq) to b.
func appendQueueKey(b []byte, host string, seq uint64) []byte {
	b = append(append(b, host...), 0)
	return binary.BigEndian.AppendUint64(b, seq)
}

func QueuePrefix(host string) []byte { return append([]byte(host), 0) }

func U64Key(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// newCrawlID draws a crawl ID: 128 random bits in hex.
func NewCrawlID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

func ValidCrawlID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}
