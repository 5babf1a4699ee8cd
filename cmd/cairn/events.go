package main

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// eventLine is what `cairn events` prints per event: one JSON object per line.
type eventLine struct {
	ID    string          `json:"id"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

func newEventsCommand() *cobra.Command {
	var (
		agent, workbench, prefix, after string
		follow, openwop                 bool
	)
	cmd := &cobra.Command{
		Use:   "events --agent A [--workbench W] [--prefix P] [--after ID] [--follow]",
		Short: "Print an agent root's change feed, one JSON line per event",
		Long: "Print the change feed of agent root A (GET /v1/agents/A/events): every committed\n" +
			"change, oldest first, as {\"id\",\"event\",\"data\"} on one line. --after resumes after\n" +
			"an event's id (the id of the last line printed), without a gap or a repeat; without\n" +
			"it the feed starts at the oldest event the server keeps. Without --follow the\n" +
			"command exits once it printed what the feed holds; with it, it waits for new events\n" +
			"and reconnects after the last one printed when the server restarts. --openwop also\n" +
			"prints the OpenWOP workspace.updated event that follows each file event.",
		Args: argsBetween(0, 0),
	}
	cmd.Flags().StringVar(&agent, "agent", envOr("CAIRN_AGENT", "default"), "agent root (env CAIRN_AGENT)")
	cmd.Flags().StringVar(&workbench, "workbench", "", "only the events of this workbench")
	cmd.Flags().StringVar(&prefix, "prefix", "", "only the file events at or below this path")
	cmd.Flags().StringVar(&after, "after", "", "resume after this event id")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new events as they happen")
	cmd.Flags().BoolVar(&openwop, "openwop", false, "also print OpenWOP's workspace.updated events")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if agent == "" {
			return usageErrorf("--agent must not be empty")
		}
		out := cmd.OutOrStdout()
		opts := client.EventsOptions{Workbench: workbench, Prefix: prefix, After: after, NoFollow: !follow}
		return newClient(cmd).FollowEvents(cmd.Context(), agent, opts, func(ev client.FeedEvent) error {
			if ev.Event == "workspace.updated" && !openwop {
				return nil
			}
			return printEvent(out, ev)
		})
	}
	return cmd
}

func printEvent(w io.Writer, ev client.FeedEvent) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(eventLine{ID: ev.ID, Event: ev.Event, Data: ev.Data}); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
