package kubelet

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/resource"
)

func testLogger(t *testing.T) logr.Logger { return testr.New(t) }

func resourceQty(s string) resource.Quantity { return resource.MustParse(s) }
