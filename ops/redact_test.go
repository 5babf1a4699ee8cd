package ops

import (
	"errors"
	"slices"
	"testing"
)

func TestRedactAllSurfacesTenantsAreAgentIDs(t *testing.T) {
	c := DefaultConfig()
	c.RedactAllSurfacesTenants = " a, b-2 ,,"
	if err := c.Validate(); err != nil || !slices.Equal(c.RedactAllSurfacesTenantList(), []string{"a", "b-2"}) {
		t.Fatalf("Validate: %v, list %q", err, c.RedactAllSurfacesTenantList())
	}
	c.RedactAllSurfacesTenants = "a,../b"
	var ce *ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Field != "RedactAllSurfacesTenants" || ce.Value != "../b" {
		t.Fatalf("Validate: %v, want RedactAllSurfacesTenants refused naming ../b", err)
	}
}
