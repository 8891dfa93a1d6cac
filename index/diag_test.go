package index

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/google/btree"
)

func TestDiagTrees(t *testing.T) {
	if os.Getenv("DIAG") == "" {
		t.Skip()
	}
	metas := benchFixture()
	blocks := make([]*block, len(metas))
	for i := range metas {
		blocks[i] = &block{id: metas[i].ID, minTime: metas[i].MinTime, maxTime: metas[i].MaxTime, tenant: uint32(i % 100)}
	}
	for _, deg := range []int{64, 128} {
		for _, desc := range []bool{false, true} {
			before := heapInUse()
			less := func(a, b idItem) bool { return !lessByID(a, b) && a != b }
			if desc {
				less = lessByID
			}
			tr := btree.NewG(deg, less)
			for _, b := range blocks {
				tr.ReplaceOrInsert(newIDItem(b))
			}
			after := heapInUse()
			t.Logf("byID deg %d desc %v: %.1f B/item", deg, desc, float64(after-before)/float64(len(blocks)))
			runtime.KeepAlive(tr)

			before = heapInUse()
			tl := func(a, b titem) bool {
				if a.minTime != b.minTime {
					return a.minTime < b.minTime
				}
				return a.b.id < b.b.id
			}
			if desc {
				tl = lessTItem
			}
			runs := make([]*btree.BTreeG[titem], 100)
			for i := range runs {
				runs[i] = btree.NewG(deg, tl)
			}
			for _, b := range blocks {
				runs[b.tenant].ReplaceOrInsert(titem{b.minTime, b.maxTime, b})
			}
			after = heapInUse()
			t.Logf("runs deg %d desc %v: %.1f B/item", deg, desc, float64(after-before)/float64(len(blocks)))
			runtime.KeepAlive(runs)
		}
	}
}

func BenchmarkDiagReplaceSmall(b *testing.B) {
	for _, n := range []int{6400 * 20, 6400 * 40, 6400 * 80, 6400 * 156} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			metas := benchFixture()[:n]
			stride := benchTenants * benchShards
			var groups [][]int
			for base := 0; base+20*stride <= len(metas); base += 20 * stride {
				for ts := 0; ts < stride; ts++ {
					g := make([]int, 20)
					for k := range g {
						g[k] = base + ts + k*stride
					}
					groups = append(groups, g)
				}
			}
			benchReplace(b, metas, groups)
		})
	}
}

func BenchmarkDiagPrimitives(b *testing.B) {
	metas := benchFixture()
	x := benchIndex()
	stride := benchTenants * benchShards
	var groups [][]string
	for base := 0; base+20*stride <= len(metas); base += 20 * stride {
		for ts := 0; ts < stride; ts++ {
			g := make([]string, 20)
			for k := range g {
				g[k] = metas[base+ts+k*stride].ID
			}
			groups = append(groups, g)
		}
	}
	b.Run("get20", func(b *testing.B) {
		i := 0
		for b.Loop() {
			for _, id := range groups[i%len(groups)] {
				if _, ok := x.s.get(id, x.pivot); !ok {
					b.Fatal("missing")
				}
			}
			i++
		}
	})
	b.Run("tombs20", func(b *testing.B) {
		tr := btree.NewG(smallDegree, lessTomb)
		pool := btree.NewG(smallDegree, lessPool)
		i := 0
		for b.Loop() {
			for _, id := range groups[i%len(groups)] {
				t := tomb{tkey: newKey(1, id), created: int64(i), release: int64(i)}
				tr.ReplaceOrInsert(t)
				pool.ReplaceOrInsert(poolKey{release: t.release, created: t.created, tkey: t.tkey})
			}
			i++
		}
	})
}

func BenchmarkDiagInsertOrder(b *testing.B) {
	blocks := make([]*block, 1_000_000)
	for i := range blocks {
		blocks[i] = &block{id: fmt.Sprintf("%026d", i), minTime: int64(i)}
	}
	for _, deg := range []int{16, 32, 64} {
		for _, front := range []bool{true, false} {
			b.Run(fmt.Sprintf("deg%d-front%v", deg, front), func(b *testing.B) {
				for b.Loop() {
					tr := btree.NewG(deg, lessTItem)
					if front {
						for _, bl := range blocks {
							tr.ReplaceOrInsert(titem{bl.minTime, bl.minTime, bl})
						}
					} else {
						for i := len(blocks) - 1; i >= 0; i-- {
							bl := blocks[i]
							tr.ReplaceOrInsert(titem{bl.minTime, bl.minTime, bl})
						}
					}
				}
			})
		}
	}
}
