package boltcheck

// WrittenFor is the go.etcd.io/bbolt release whose page format this
// package was last reviewed against. TestWrittenForGoMod fails when
// go.mod requires another: review the layout (see the package comment)
// against the new release's page.go and meta.go, then change it.
const WrittenFor = "v1.5.0"
