package graph

// This file describes the queue nodes for the graph report (QueueInfo,
// queueInfos).

import (
	"cmp"
	"slices"
)

// QueueInfo is what graph read of one queue node beyond its Queue
// settings: the counts behind them and the queue's depth over time.
type QueueInfo struct {
	// Name is the queue node's name.
	Name string `json:"name"`
	// Published counts messages published into the queue (publish spans
	// that did not fail); Messages the messages delivered at least once;
	// Deliveries every delivery; Redelivered the deliveries that were
	// not a message's first (a repeated message id or link, or the
	// span's redelivery count); Failed the deliveries whose processing
	// failed; Exhausted the messages whose every delivery failed.
	Published   int64 `json:"published"`
	Messages    int64 `json:"messages"`
	Deliveries  int64 `json:"deliveries"`
	Redelivered int64 `json:"redelivered"`
	Failed      int64 `json:"failed"`
	Exhausted   int64 `json:"exhausted"`
	// Republished counts the redeliveries by ack + republish (the
	// consumer published the message again into this queue), and
	// ViaDelay those that came back through the delay queue DelayQueue
	// (the consumer published the message there, nothing was delivered
	// from it, and the message was delivered from here again).
	Republished int64  `json:"republished,omitempty"`
	ViaDelay    int64  `json:"via_delay,omitempty"`
	DelayQueue  string `json:"delay_queue,omitempty"`
	// RedeliveryShare is Redelivered over Deliveries.
	RedeliveryShare float64 `json:"redelivery_share"`
	// RedeliveryDelayMS are the 50%, 95% and 99% quantiles of the time
	// from a failed delivery's end to the message back in the queue: its
	// republish (0 when the republish came first), else its next
	// delivery (for a delay queue's, its TTL and the wait here); nil
	// when no message was seen delivered twice.
	RedeliveryDelayMS []float64 `json:"redelivery_delay_ms,omitempty"`
	// DepthSource says where Depth comes from: DepthMetric (the
	// broker's queue_depth series for the queue's label) or DepthSpans
	// (messages between their publish and their delivery, as the spans
	// show them: the mean per window of the node's series).
	DepthSource string       `json:"depth_source"`
	Depth       []DepthPoint `json:"depth"`
}

// DepthPoint is a queue's ready messages at a time.
type DepthPoint struct {
	TimeNS int64   `json:"time_ns"`
	Ready  float64 `json:"ready"`
}

// Where a queue's depth over time comes from (QueueInfo.DepthSource).
const (
	DepthMetric = "queue_depth metric"
	DepthSpans  = "publish and delivery times"
)

// queueInfos describes the queue nodes; infos are the nodes' infos in
// name order.
func (b *Builder) queueInfos(infos []NodeInfo) []QueueInfo {
	if len(b.mq.queues) == 0 {
		return nil
	}
	byName := make(map[string]*NodeInfo, len(infos))
	for i := range infos {
		byName[infos[i].Name] = &infos[i]
	}
	out := make([]QueueInfo, 0, len(b.mq.queues))
	for _, qi := range b.mq.queues {
		acc := b.nodes[qi]
		if acc.dropped {
			continue
		}
		q := acc.queue
		info := QueueInfo{
			Name: acc.name, Published: q.published, Messages: q.messages, Deliveries: q.deliveries,
			Redelivered: q.redelivered, Failed: q.failed, Exhausted: q.exhausted,
			Republished: q.republished, ViaDelay: q.viaDelay,
		}
		var via int32 = -1
		for v := range q.delayVia {
			if via < 0 || b.nodes[v].name < b.nodes[via].name {
				via = v
			}
		}
		if via >= 0 {
			info.DelayQueue = b.nodes[via].name
		}
		if q.deliveries > 0 {
			info.RedeliveryShare = round6(float64(q.redelivered) / float64(q.deliveries))
		}
		if d := q.delays.sorted(); len(d) > 0 {
			info.RedeliveryDelayMS = []float64{roundMS(quantile(d, 0.5)), roundMS(quantile(d, 0.95)), roundMS(quantile(d, 0.99))}
		}
		if qm := b.metrics.queue(b.syms.names[q.dest]); qm != nil && len(qm.depth) > 0 {
			info.DepthSource = DepthMetric
			for t, v := range qm.depth {
				info.Depth = append(info.Depth, DepthPoint{TimeNS: t, Ready: v})
			}
			slices.SortFunc(info.Depth, func(x, y DepthPoint) int { return cmp.Compare(x.TimeNS, y.TimeNS) })
		} else if ni := byName[acc.name]; ni != nil {
			info.DepthSource = DepthSpans
			for _, w := range ni.Series {
				info.Depth = append(info.Depth, DepthPoint{TimeNS: w.StartNS, Ready: w.MeanInFlight})
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(x, y QueueInfo) int { return cmp.Compare(x.Name, y.Name) })
	return out
}
