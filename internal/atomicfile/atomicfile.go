// Package atomicfile replaces a file so that a reader, or the file after a
// crash, holds the old content or the new, never a part of either.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data durably: a temporary file in the same
// folder, synced, renamed over path, and the folder synced so the rename
// survives a crash. For state a restarted process must find.
func Write(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm, true)
}

// Replace is Write without the syncs: readers never see a partial file,
// but a crash may lose the latest content. For files people read.
func Replace(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm, false)
}

func replace(path string, data []byte, perm os.FileMode, durable bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
