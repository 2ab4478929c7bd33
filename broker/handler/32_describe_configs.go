package handler

import (
	"context"
	"slices"

	"github.com/strata-broker/strata/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeConfigs: v0-4
//
// Behavior:
// * Topic resources list every topic key with its effective value and
//   source: topic override, or the source of the broker key behind it
//   (this broker's dynamic config, the cluster-wide dynamic default,
//   static broker config, or default).
// * A broker resource naming this broker lists every broker key with its
//   effective value and source; read-only unless the key is dynamic. The
//   cluster default ("", Kafka's <default>) lists only the keys it sets.
//   Another broker id, or a name that is not one, is INVALID_REQUEST.
// * ConfigNames filters; v1+ IncludeSynonyms adds the synonyms, Kafka's
//   list of where the value may come from by precedence (for
//   log.retention.ms: .ms, .minutes and .hours in each layer that sets
//   them); v3+ IncludeDocumentation adds the key's doc.
// * Other resource types are INVALID_REQUEST.
// * A topic needs DESCRIBE_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), a
//   broker resource DESCRIBE_CONFIGS on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED), as in Kafka.

func handleDescribeConfigs(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range r.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if code := env.configsDenied(req, aclDescribeConfigs, rr.ResourceType, rr.ResourceName); code != 0 {
			sr.ErrorCode, sr.ErrorMessage = code, kmsg.StringPtr("Authorization failed.")
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		var entries []config.Entry
		switch rr.ResourceType {
		case resourceTopic:
			t, ok := env.Cache.Topic(rr.ResourceName)
			if !ok {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			entries = env.cfg().DescribeTopic(t.Configs)
		case resourceBroker:
			var err error
			if entries, err = env.describeBroker(rr.ResourceName); err != nil {
				sr.ErrorCode, sr.ErrorMessage = resourceError(err)
				resp.Resources = append(resp.Resources, sr)
				continue
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = kmsg.StringPtr("unsupported resource type")
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.ReadOnly, c.IsSensitive = e.Name, e.ReadOnly, e.Sensitive
			if !e.Sensitive {
				c.Value = kmsg.StringPtr(e.Value)
			}
			c.Source = kmsg.ConfigSource(e.Source)
			c.IsDefault = e.Source == config.SourceDefault
			c.ConfigType = kmsg.ConfigType(e.Type)
			if r.IncludeDocumentation {
				c.Documentation = kmsg.StringPtr(e.Doc)
			}
			if r.IncludeSynonyms {
				for _, s := range e.Synonyms {
					syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					syn.Name, syn.Source = s.Name, kmsg.ConfigSource(s.Source)
					if !e.Sensitive {
						syn.Value = kmsg.StringPtr(s.Value)
					}
					c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
				}
			}
			sr.Configs = append(sr.Configs, c)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return Result{Resp: resp}, nil
}
