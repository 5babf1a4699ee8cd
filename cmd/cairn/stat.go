package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// statCard is what `cairn stat` prints, and with --json encodes.
type statCard struct {
	Path        string `json:"path"`
	Kind        string `json:"kind"` // "workbench", "directory" or "file"
	SizeBytes   int64  `json:"size_bytes"`
	FileCount   *int64 `json:"file_count,omitempty"`
	EntryCount  *int64 `json:"entry_count,omitempty"`
	Generation  uint64 `json:"generation,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	DigestURI   string `json:"digest_uri,omitempty"`
	Executable  bool   `json:"executable,omitempty"`
	// LastModified is RFC 3339 in UTC; "" when the server did not say.
	LastModified string `json:"last_modified,omitempty"`
}

func newStatCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stat --agent A --workbench W [PATH] [--at-snapshot ID|NAME] [--json]",
		Short: "Show the metadata of a file, a directory or a workbench, without its body",
		Long: "Show PATH's metadata: for a file its size in bytes, generation, content type,\n" +
			"digest, executable flag and modification time; for a directory its number of\n" +
			"entries; without PATH the workbench's size, file count and entry count. With\n" +
			"--at-snapshot, as it was at a snapshot. --json prints one JSON object.",
		Args: argsBetween(0, 1),
	}
	t := addSnapshotTargetFlags(cmd, "stat at this snapshot (id or name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		at, err := t.checkAt(cmd)
		if err != nil {
			return err
		}
		path := ""
		if len(args) == 1 {
			path = strings.Trim(args[0], "/")
		}
		card, err := stat(cmd, &t.target, path, at)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSONLine(cmd.OutOrStdout(), card)
		}
		return printStat(cmd.OutOrStdout(), card)
	}
	return cmd
}

// stat builds the card of path ("" = the workbench): a HEAD for a file, else a listing
// for a directory.
func stat(cmd *cobra.Command, t *target, path string, at client.SnapshotRef) (*statCard, error) {
	c := newClient(cmd)
	ctx := cmd.Context()
	if path == "" {
		info, err := c.DescribeWorkbench(ctx, t.agent, t.workbench, at)
		if err != nil {
			return nil, err
		}
		return &statCard{Path: t.workbench, Kind: "workbench", SizeBytes: info.SizeBytes, FileCount: &info.FileCount, EntryCount: &info.EntryCount}, nil
	}
	info, err := c.StatAt(ctx, t.agent, t.workbench, path, at)
	if err == nil {
		card := &statCard{Path: path, Kind: "file", SizeBytes: info.Size, Generation: info.Generation,
			ContentType: info.ContentType, DigestURI: info.Digest, Executable: info.Executable}
		if !info.LastModified.IsZero() {
			card.LastModified = info.LastModified.UTC().Format(time.RFC3339)
		}
		return card, nil
	}
	// A directory answers 409 NotArtifact (which a HEAD reports by its status alone,
	// as Conflict); an implicit one that is gone, 404.
	var ce *client.Error
	if !errors.As(err, &ce) || ce.HTTPStatus != http.StatusConflict && ce.HTTPStatus != http.StatusNotFound {
		return nil, fmt.Errorf("stat %s: %w", displayed(path), err)
	}
	page, lerr := c.List(ctx, t.agent, t.workbench, path, client.ListOptions{Limit: 1, AtSnapshot: at})
	if lerr != nil {
		return nil, fmt.Errorf("stat %s: %w", displayed(path), err) // neither a file nor a directory
	}
	n := int64(page.EntryCount)
	return &statCard{Path: path, Kind: "directory", EntryCount: &n}, nil
}

func printStat(w io.Writer, c *statCard) error {
	lines := [][2]string{{"path", displayed(c.Path)}, {"kind", c.Kind}}
	if c.Kind != "directory" {
		lines = append(lines, [2]string{"size", fmt.Sprintf("%d bytes", c.SizeBytes)})
	}
	if c.FileCount != nil {
		lines = append(lines, [2]string{"files", fmt.Sprint(*c.FileCount)})
	}
	if c.EntryCount != nil {
		lines = append(lines, [2]string{"entries", fmt.Sprint(*c.EntryCount)})
	}
	if c.Kind == "file" {
		lines = append(lines, [2]string{"generation", fmt.Sprint(c.Generation)}, [2]string{"content type", displayed(c.ContentType)},
			[2]string{"digest", c.DigestURI}, [2]string{"executable", fmt.Sprint(c.Executable)})
		if c.LastModified != "" {
			lines = append(lines, [2]string{"modified", c.LastModified})
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintf(w, "%-13s %s\n", l[0]+":", l[1]); err != nil {
			return err
		}
	}
	return nil
}
