package enum_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/enum"
)

type color uint8

func TestName(t *testing.T) {
	for v, want := range []string{"color(0)", "red", "green", "color(3)", "color(255)"} {
		c := color(v)
		if v == 4 {
			c = 255
		}
		require.Equal(t, want, enum.Name("color", c, 1, "red", "green"))
	}
	require.Equal(t, "none", enum.Name("color", color(0), 0, "none"))
}
