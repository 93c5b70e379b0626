package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MarkerFile is written into every release directory (and listed in its SHA256SUMS): a
// directory make release may replace is one that carries it. A SHA256SUMS alone is not
// enough, since any directory of downloads may hold one.
const MarkerFile = ".etcd-operator-release"

// distPath cleans DIST and refuses the paths a release can never be renamed onto.
func distPath(dist string) (string, error) {
	if dist == "" {
		return "", errors.New("DIST is empty")
	}
	d := filepath.Clean(dist)
	if b := filepath.Base(d); b == "." || b == ".." || b == string(filepath.Separator) {
		return "", fmt.Errorf("DIST=%s: a release needs a directory of its own (e.g. dist/<version>)", dist)
	}
	return d, nil
}

// CheckReplaceable returns nil if a release may be written to dist, replacing what is
// there: dist does not exist, is an empty directory, or holds a release make release
// wrote and nothing else: the marker, SHA256SUMS and only files SHA256SUMS lists (and
// the directories holding them). Anything else may be someone's files, which make
// release must not delete; the error names dist and the first such entry.
func CheckReplaceable(dist string) error {
	d, err := distPath(dist)
	if err != nil {
		return err
	}
	refuse := func(why string) error {
		return fmt.Errorf("DIST=%s %s, so it is not a release make release wrote and will not be replaced: remove it yourself or pick another DIST", d, why)
	}
	fi, err := os.Lstat(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return refuse("is not a directory")
	}
	entries, err := os.ReadDir(d)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if m, err := os.Lstat(filepath.Join(d, MarkerFile)); err != nil || !m.Mode().IsRegular() {
		return refuse("has no " + MarkerFile)
	}
	listed, err := listedFiles(d)
	if err != nil {
		return refuse(err.Error())
	}
	if !listed[MarkerFile] {
		return refuse(ChecksumsFile + " does not list " + MarkerFile)
	}
	// Directories that hold a listed file: images/, images/blobs/sha256, bundle/….
	dirs := map[string]bool{}
	for f := range listed {
		for p := filepath.Dir(f); p != "."; p = filepath.Dir(p) {
			dirs[p] = true
		}
	}
	return filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(d, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case e.IsDir() && dirs[rel]:
			return nil
		case e.IsDir():
			return refuse("holds the directory " + rel + ", which " + ChecksumsFile + " lists no file in")
		case rel == ChecksumsFile && e.Type().IsRegular():
			return nil
		case listed[rel] && e.Type().IsRegular():
			return nil
		}
		return refuse("holds " + rel + ", which " + ChecksumsFile + " does not list")
	})
}

// listedFiles reads the paths dir/SHA256SUMS lists.
func listedFiles(dir string) (map[string]bool, error) {
	f, err := os.Open(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		return nil, fmt.Errorf("has no readable %s", ChecksumsFile)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, rel, ok := strings.Cut(sc.Text(), "  ")
		if !ok || rel == "" {
			return nil, fmt.Errorf("has a %s line that is not \"<sha256>  <file>\"", ChecksumsFile)
		}
		listed[rel] = true
	}
	return listed, sc.Err()
}

// Begin checks that dist may be replaced and creates the directory the release is built
// in: <dist>.tmp.<random>, beside dist so that Finish's rename stays on one filesystem.
// Checking first spares a release build that could not be kept.
func Begin(dist string) (string, error) {
	if err := CheckReplaceable(dist); err != nil {
		return "", err
	}
	d, _ := distPath(dist)
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(filepath.Dir(d), filepath.Base(d)+".tmp.")
}

// Finish puts the release built in tmp at dist, all or nothing: tmp must hold a whole
// release (the marker, and every file SHA256SUMS lists unchanged), and dist must still
// be replaceable (CheckReplaceable; files may have appeared during the build). An
// existing dist is renamed aside, tmp renamed onto it, and the old one then removed; if
// the second rename fails the old one is put back.
func Finish(tmp, dist string) error {
	d, err := distPath(dist)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(tmp, MarkerFile)); err != nil {
		return fmt.Errorf("%s holds no release: %w", tmp, err)
	}
	if err := VerifyChecksums(tmp); err != nil {
		return fmt.Errorf("%s: %w", tmp, err)
	}
	if err := CheckReplaceable(d); err != nil {
		return err
	}
	if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(tmp, d)
	}
	// A fresh name beside dist for the old release (os.Rename will not move a
	// directory onto an existing one, so the placeholder MkdirTemp made goes first).
	old, err := os.MkdirTemp(filepath.Dir(d), filepath.Base(d)+".old.")
	if err != nil {
		return err
	}
	if err := os.Remove(old); err != nil {
		return err
	}
	if err := os.Rename(d, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, d); err != nil {
		if back := os.Rename(old, d); back != nil {
			return fmt.Errorf("%w; and putting the previous release back from %s: %v", err, old, back)
		}
		return err
	}
	return os.RemoveAll(old)
}
