package main

import "github.com/spf13/cobra"

func addServerCommands(root *cobra.Command) {}
