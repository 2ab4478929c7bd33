package e2e

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// apiVersionsV5 sends one ApiVersions v5 request on a fresh connection and
// returns the answer.
func apiVersionsV5(t *testing.T, addr string, clusterID *string, nodeID int32) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 5, "strata-e2e", "1"
	req.ClusterID, req.NodeID = clusterID, nodeID
	// Request header v2: key, version, correlation id, client id, no tags.
	body := binary.BigEndian.AppendUint16(nil, 18)
	body = binary.BigEndian.AppendUint16(body, 5)
	body = binary.BigEndian.AppendUint32(body, 7)
	body = append(binary.BigEndian.AppendUint16(body, 1), 'x', 0)
	body = req.AppendTo(body)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, b); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	// Response header v0 (ApiVersions never uses the flexible header).
	if err := resp.ReadFrom(b[4:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestApiVersionsV5 checks KIP-1242: a client that names the cluster and
// node it means to reach is told REBOOTSTRAP_REQUIRED when either is
// wrong, INVALID_REQUEST when it names only one, and served otherwise.
func TestApiVersionsV5(t *testing.T) {
	b := harness.Start(t, nil)
	cl := b.Client()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), cl)
	if err != nil || md.ClusterID == nil {
		t.Fatalf("metadata: %v", err)
	}
	other := "not-this-cluster"
	for _, c := range []struct {
		name    string
		cluster *string
		node    int32
		want    int16
	}{
		{"bootstrapping", nil, -1, 0},
		{"this broker", md.ClusterID, md.Brokers[0].NodeID, 0},
		{"other cluster", &other, md.Brokers[0].NodeID, kerr.RebootstrapRequired.Code},
		{"other node", md.ClusterID, md.Brokers[0].NodeID + 1, kerr.RebootstrapRequired.Code},
		{"cluster only", md.ClusterID, -1, kerr.InvalidRequest.Code},
		{"node only", nil, md.Brokers[0].NodeID, kerr.InvalidRequest.Code},
	} {
		resp := apiVersionsV5(t, b.Addr(), c.cluster, c.node)
		if resp.ErrorCode != c.want {
			t.Errorf("%s: error %d, want %d", c.name, resp.ErrorCode, c.want)
		}
		if c.want == 0 && len(resp.ApiKeys) == 0 {
			t.Errorf("%s: no api keys", c.name)
		}
	}
}
