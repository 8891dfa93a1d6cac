package demo

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

// DataConfig shapes the synthetic ingest.
type DataConfig struct {
	// Segments is the number of level-0 segments to ingest.
	Segments int
	// Tenants and Shards: segments are written round-robin over shards;
	// each holds datasets of several tenants.
	Tenants, Shards int
	// Records is the number of records of one dataset in one segment.
	Records int
	// Start and Span are the event time the segments cover: the segments
	// of a shard cover consecutive windows of Span.
	Start time.Time
	Span  time.Duration
	// Seed makes the data reproducible.
	Seed uint64
}

var tenantNames = []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka",
	"tyrell", "cyberdyne", "soylent", "aperture", "oscorp", "massive-dynamic", "vandelay", "pied-piper"}

var services = []string{"api-gateway", "checkout", "payments", "search", "auth", "inventory", "recommendations", "notifications"}

var regions = []string{"eu-west-1", "us-east-1", "ap-south-1"}

var frames = []string{"runtime.main", "main.main", "net/http.(*conn).serve", "net/http.HandlerFunc.ServeHTTP",
	"encoding/json.Marshal", "database/sql.(*DB).QueryContext", "runtime.mallocgc", "runtime.gcBgMarkWorker",
	"compress/gzip.(*Writer).Write", "crypto/tls.(*Conn).Read", "sort.Slice", "strings.Builder.WriteString"}

var profileTypes = []string{"process_cpu:cpu:nanoseconds", "memory:alloc_space:bytes", "goroutine:goroutine:count"}

// TenantName returns the name of the i-th tenant.
func TenantName(i int) string {
	if i < len(tenantNames) {
		return tenantNames[i]
	}
	return fmt.Sprintf("tenant-%03d", i)
}

// TenantList returns the names of the configured tenants.
func (c DataConfig) TenantList() []string {
	out := make([]string, c.Tenants)
	for i := range out {
		out[i] = TenantName(i)
	}
	return out
}

// End is the end of the event time the segments cover.
func (c DataConfig) End() time.Time { return c.Start.Add(c.Span) }

// window returns the event-time window of segment i.
func (c DataConfig) window(i int) (from, to int64) {
	perShard := (c.Segments + c.Shards - 1) / c.Shards
	w := int64(c.Span) / int64(perShard)
	from = c.Start.UnixNano() + int64(i/c.Shards)*w
	return from, from + w - 1
}

// SegmentID names the i-th segment: "seg/<shard>/<number>".
func SegmentID(shard uint32, i int) string { return fmt.Sprintf("seg/%02d/%06d", shard, i) }

// Segment builds the i-th segment: its block info and datasets. It is a
// function of the configuration and i only.
func (c DataConfig) Segment(i int) (blockmerge.BlockInfo, []blockmerge.Dataset) {
	shard := uint32(i % c.Shards)
	rng := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	from, to := c.window(i)
	info := blockmerge.BlockInfo{ID: SegmentID(shard, i), Shard: shard, Level: 0}
	var sets []blockmerge.Dataset
	for t := range c.Tenants {
		// Busy tenants appear in most segments, quiet ones in few.
		if rng.IntN(c.Tenants+2) > c.Tenants-t+1 {
			continue
		}
		tenant := TenantName(t)
		nsvc := 1 + (t+int(shard))%3
		for s := range nsvc {
			svc := services[(t*3+s)%len(services)]
			recs := make([]blockmerge.Record, 0, c.Records)
			for r := range c.Records {
				pt := profileTypes[r%len(profileTypes)]
				pod := fmt.Sprintf("%s-%x-%d", svc, 0x5f00+int(shard)*16+rng.IntN(4), r%5)
				key := fmt.Sprintf(`%s{service_name=%q,pod=%q,region=%q,shard="%d"}`, pt, svc, pod, regions[(t+r)%len(regions)], shard)
				ts := from + rng.Int64N(to-from+1)
				depth := 3 + rng.IntN(4)
				stack := make([]byte, 0, 128)
				for d := range depth {
					if d > 0 {
						stack = append(stack, ';')
					}
					stack = append(stack, frames[rng.IntN(len(frames))]...)
				}
				stack = fmt.Appendf(stack, " %d", 1+rng.IntN(100_000))
				recs = append(recs, blockmerge.Record{Key: []byte(key), Timestamp: ts, Value: stack})
			}
			sets = append(sets, blockmerge.Dataset{Tenant: tenant, Name: svc, Records: recs})
		}
	}
	if len(sets) == 0 { // every segment holds something
		sets = append(sets, blockmerge.Dataset{Tenant: TenantName(0), Name: services[0], Records: []blockmerge.Record{
			{Key: []byte(`process_cpu:cpu:nanoseconds{service_name="api-gateway"}`), Timestamp: from, Value: []byte("runtime.main 1")}}})
	}
	return info, sets
}

// RecordHash identifies a record of a tenant's dataset: FNV-1a over the
// tenant, the dataset name, the key, the timestamp and the value.
func RecordHash(tenant, dataset string, r blockmerge.Record) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(tenant))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(dataset))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(r.Key)
	var ts [9]byte
	binary.BigEndian.PutUint64(ts[1:], uint64(r.Timestamp))
	_, _ = h.Write(ts[:])
	_, _ = h.Write(r.Value)
	return h.Sum64()
}

// Ledger remembers every record and segment ingested, for the
// verification. It is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	hashes   map[uint64]struct{}
	sum      uint64
	segments map[string]ck.BlockMeta
	bytes    int64
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{hashes: make(map[uint64]struct{}), segments: make(map[string]ck.BlockMeta)}
}

// Claim records the records of datasets, making each unique first: a
// record equal to (or colliding with) one already ingested gets its
// timestamp moved by a nanosecond until it is new. It modifies datasets.
func (l *Ledger) Claim(datasets []blockmerge.Dataset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for d := range datasets {
		ds := &datasets[d]
		seen := make(map[uint64]struct{}, len(ds.Records))
		for i := range ds.Records {
			r := &ds.Records[i]
			for {
				h := RecordHash(ds.Tenant, ds.Name, *r)
				_, old := l.hashes[h]
				if !old {
					if _, dup := seen[h]; !dup {
						seen[h] = struct{}{}
						l.hashes[h] = struct{}{}
						l.sum += h
						break
					}
				}
				r.Timestamp++
			}
		}
	}
}

// AddSegment records a written segment.
func (l *Ledger) AddSegment(m ck.BlockMeta) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segments[m.ID] = m
	l.bytes += m.Size
}

// Records returns the number of records ingested and the checksum: the
// sum (mod 2^64) of their hashes.
func (l *Ledger) Records() (n int, sum uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hashes), l.sum
}

// Has reports whether a record hash was ingested.
func (l *Ledger) Has(h uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.hashes[h]
	return ok
}

// Segments returns the ingested segments in ID order and their total size.
func (l *Ledger) Segments() ([]ck.BlockMeta, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ck.BlockMeta, 0, len(l.segments))
	for _, m := range l.segments {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, l.bytes
}

// ReadAmplification returns the number of ingested segments a query of
// tenant over [from, to] would read without compaction.
func (l *Ledger) ReadAmplification(tenant string, from, to int64) int {
	segs, _ := l.Segments()
	n := 0
	for i := range segs {
		m := &segs[i]
		if m.MinTime > to || m.MaxTime < from {
			continue
		}
		for j := range m.Datasets {
			if m.DatasetTenant(&m.Datasets[j]) == tenant {
				n++
				break
			}
		}
	}
	return n
}
