//go:build linux && !arm

package blockmerge

import (
	"os"
	"syscall"
)

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writeback of the
// range's dirty pages without waiting for it.
const syncFileRangeWrite = 2

// startWriteback asks the kernel to start writing the range [off, off+n)
// of f to disk now, so that the final fsync finds most of the file already
// written (write-behind, as RocksDB's bytes_per_sync). It is a hint: errors
// are ignored, and the fsync at commit remains the durability point.
func startWriteback(f *os.File, off, n int64) {
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = sc.Control(func(fd uintptr) {
		_ = syscall.SyncFileRange(int(fd), off, n, syncFileRangeWrite)
	})
}
