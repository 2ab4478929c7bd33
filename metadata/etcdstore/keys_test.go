package etcdstore

import (
	"testing"

	"github.com/strata-broker/strata/metadata"
)

func TestKeysRoundTrip(t *testing.T) {
	for _, prefix := range []string{"", "/strata", "/strata/", "/x/y"} {
		k := newKeys(prefix)
		if kind, topic, _ := k.parse(k.topic("a.b_c-1")); kind != keyTopic || topic != "a.b_c-1" {
			t.Errorf("%q: topic key parsed as %v %q", prefix, kind, topic)
		}
		if kind, topic, p := k.parse(k.partition("t", 12)); kind != keyPartition || topic != "t" || p != 12 {
			t.Errorf("%q: partition key parsed as %v %q %d", prefix, kind, topic, p)
		}
		if kind, _, id := k.parse(k.broker(3)); kind != keyBroker || id != 3 {
			t.Errorf("%q: broker key parsed as %v %d", prefix, kind, id)
		}
		if kind, _, id := k.parse(k.brokerConfigs(4)); kind != keyBrokerConfigs || id != 4 {
			t.Errorf("%q: broker configs key parsed as %v %d", prefix, kind, id)
		}
		if kind, _, id := k.parse(k.brokerConfigs(metadata.ClusterDefault)); kind != keyBrokerConfigs || id != metadata.ClusterDefault {
			t.Errorf("%q: cluster default configs key parsed as %v %d", prefix, kind, id)
		}
		for _, other := range []string{k.root + "configs/brokers/-1", k.root + "configs/brokers/x", k.root + "configs/brokers/", k.clusterID(), k.producerIDs(), k.root + "partitions/t/x", k.root + "partitions/t/-1",
			k.root + "partitions//1", k.root + "brokers/ids/", k.root + "topics/", k.root + "topics/a/b", "/elsewhere/topics/t"} {
			if kind, _, _ := k.parse(other); kind != keyOther {
				t.Errorf("%q: %q parsed as %v", prefix, other, kind)
			}
		}
	}
	if got := newKeys("").topic("t"); got != "/strata/topics/t" {
		t.Errorf("default topic key = %q", got)
	}
}
