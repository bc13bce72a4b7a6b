package graph

// This file describes the queue nodes for the graph report (QueueInfo).

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
