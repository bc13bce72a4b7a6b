package ingest

import (
	"strconv"
	"strings"

	"cascade"
)

// This file fills the messaging columns of cascade.Span from span
// attributes: the OpenTelemetry messaging conventions (current and older
// names), RabbitMQ's and Kafka's own keys, and the tags Brave's messaging
// instrumentations write (kafka-clients, spring-rabbit). The keys are
// listed below, most specific first.

// Messaging attribute keys, most specific first.
var (
	msgSystemKeys = []string{"messaging.system"}
	// The operation type: current (messaging.operation.type) and older
	// (messaging.operation) conventions.
	msgOperationKeys = []string{"messaging.operation.type", "messaging.operation"}
	// The destination. RabbitMQ's convention puts the exchange in
	// destination.name, empty for the default exchange, whose routing key
	// is then the queue's name: first skips empty values.
	msgDestinationKeys = []string{
		"messaging.destination.name", "messaging.destination",
		"messaging.rabbitmq.destination.routing_key", "messaging.rabbitmq.routing_key",
	}
	msgGroupKeys = []string{
		"messaging.consumer.group.name", "messaging.kafka.consumer.group",
		"messaging.kafka.consumer_group", "messaging.destination.subscription.name",
	}
	msgIDKeys    = []string{"messaging.message.id", "messaging.message_id"}
	msgBatchKeys = []string{"messaging.batch.message_count"}
	msgBytesKeys = []string{
		"messaging.message.body.size", "messaging.message.envelope.size",
		"messaging.message_payload_size_bytes",
	}
	// Redelivery evidence. Counts of earlier deliveries as the x-death
	// header records them, or as a quorum queue's x-delivery-count header
	// does (the failed deliveries before this one), a header captured as
	// messaging.header.<name>, dashes as underscores, the way
	// OpenTelemetry's header capture names it.
	msgDeathCountKeys = []string{
		"messaging.rabbitmq.message.x_death_count", "messaging.header.x_death_count",
		"messaging.rabbitmq.message.delivery_count", "messaging.header.x_delivery_count",
	}
	// Delivery attempts counted from 1 (Spring Kafka's
	// kafka_deliveryAttempt header, Azure's and others' delivery count).
	msgAttemptKeys = []string{"messaging.header.kafka_deliveryAttempt", "messaging.message.delivery_count"}
	// Flags that say the broker delivered the message before.
	msgRedeliveredKeys = []string{
		"messaging.rabbitmq.message.redelivered", "messaging.message.redelivered",
		"rabbitmq.redelivered", "redelivered",
	}

	// Brave's messaging tags (its kafka-clients and spring-rabbit
	// instrumentations write rabbit.*; rabbitmq.* is taken too).
	braveQueueKeys      = []string{"rabbit.queue", "rabbitmq.queue"}
	braveExchangeKeys   = []string{"rabbit.exchange", "rabbitmq.exchange"}
	braveRoutingKeys    = []string{"rabbit.routing_key", "rabbitmq.routing_key"}
	braveKafkaTopicKeys = []string{"kafka.topic"}
)

// Messaging systems, as messaging.system spells them.
const (
	systemKafka    = "kafka"
	systemRabbitMQ = "rabbitmq"
)

// applyMessaging fills the messaging columns of s (MessagingSystem,
// MessagingOperation, Destination, ConsumerGroup, MessageID, BatchCount,
// MessageBytes, Redelivery) from its attributes, and the Peer of a
// producer span that has none from its destination. s.Kind and
// s.Operation must be set. A span that is neither a producer nor a
// consumer, carries no messaging.system or destination and is not
// Brave's on-message span is left as it is, after two lookups (Brave's
// tags are read on producer and consumer spans only, as Brave writes
// them); so is a field its attributes say nothing of.
func applyMessaging(s *cascade.Span, get attrGetter) {
	system, _ := first(get, msgSystemKeys)
	dest, hasDest := first(get, msgDestinationKeys)
	messaging := s.Kind == cascade.KindProducer || s.Kind == cascade.KindConsumer
	if system == "" && !hasDest && !messaging && s.Operation != braveProcessName {
		return
	}
	// Brave tags only its producer and consumer spans.
	var braveSys, braveDest, braveGroup string
	if messaging {
		braveSys, braveDest, braveGroup = braveMessaging(s.Kind, get)
	}
	name := nameOperation(s.Operation)
	if system == "" {
		system = braveSys
	}
	if dest == "" {
		dest = braveDest
	}
	s.MessagingSystem = strings.ToLower(system)
	s.Destination = dest
	if g, ok := first(get, msgGroupKeys); ok {
		s.ConsumerGroup = g
	} else {
		s.ConsumerGroup = braveGroup
	}
	s.MessageID, _ = first(get, msgIDKeys)
	s.BatchCount = int32(attrInt(get, msgBatchKeys, 1<<31-1))
	s.MessageBytes = attrInt(get, msgBytesKeys, 1<<62)
	s.Redelivery = redelivery(get)

	s.MessagingOperation = ""
	if v, ok := first(get, msgOperationKeys); ok {
		s.MessagingOperation = operationType(v)
	}
	if s.MessagingOperation == "" {
		s.MessagingOperation = name
	}
	if s.MessagingOperation == "" {
		switch s.Kind {
		case cascade.KindProducer:
			s.MessagingOperation = cascade.MessagingPublish
		case cascade.KindConsumer:
			s.MessagingOperation = cascade.MessagingReceive
		}
	}
	if s.Peer == "" && s.Kind == cascade.KindProducer {
		s.Peer = dest
	}
}

// braveMessaging reads the tags of Brave's messaging instrumentations: the
// system (from the tag's prefix), the destination and, for RabbitMQ
// consumers, the queue as the consumer group. A consumer's destination is
// the queue it reads; a producer's is the exchange, else the routing key
// (the default exchange routes by queue name). All empty when no such tag
// is there.
func braveMessaging(kind cascade.SpanKind, get attrGetter) (system, dest, group string) {
	if v, ok := first(get, braveKafkaTopicKeys); ok {
		return systemKafka, v, ""
	}
	queue, hasQueue := first(get, braveQueueKeys)
	exchange, hasExchange := first(get, braveExchangeKeys)
	key, hasKey := first(get, braveRoutingKeys)
	if !hasQueue && !hasExchange && !hasKey {
		return "", "", ""
	}
	switch {
	case hasQueue && kind != cascade.KindProducer:
		dest = queue
	case hasExchange:
		dest = exchange
	default:
		dest = key
	}
	return systemRabbitMQ, dest, queue
}

// operationType maps a messaging.operation.type (or older
// messaging.operation) value to one of the cascade.Messaging constants:
// the older "deliver" is "process"; a value it does not know is kept in
// lower case.
func operationType(v string) string {
	v = strings.ToLower(v)
	switch v {
	case "deliver":
		return cascade.MessagingProcess
	case "ack", "nack", "reject":
		return cascade.MessagingSettle
	}
	return v
}

// braveProcessName is the name Brave's spring-rabbit gives the span that
// processes a message, the child of its "next-message" consumer span. It
// has no kind and no tags, so the name alone marks it.
const braveProcessName = "on-message"

// nameOperation infers the operation of a messaging span from its name
// when the name is one that messaging instrumentations give their spans:
// Brave's "poll" and "next-message" (receive), "on-message" (process), and
// the OpenTelemetry convention's "{operation} {destination}" names. Empty
// when the name says nothing.
func nameOperation(name string) string {
	switch name {
	case "poll", "next-message":
		return cascade.MessagingReceive
	case braveProcessName:
		return cascade.MessagingProcess
	}
	verb, _, _ := strings.Cut(name, " ")
	switch verb {
	case "publish", "send", "create", "receive", "process", "settle":
		if verb != name { // "process" alone is too common a name to trust
			return verb
		}
	case "deliver":
		if verb != name {
			return cascade.MessagingProcess
		}
	}
	return ""
}

// attrInt returns the first of keys that holds a whole number in
// [0, max], else 0.
func attrInt(get attrGetter, keys []string, max int64) int64 {
	v, ok := first(get, keys)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > max {
		return 0
	}
	return n
}

// redelivery counts the deliveries of the message before this one: an
// x-death count as recorded, a 1-based delivery attempt less one, else 1
// when a redelivered flag is true, else 0.
func redelivery(get attrGetter) int32 {
	if n := attrInt(get, msgDeathCountKeys, 1<<31-1); n > 0 {
		return int32(n)
	}
	if n := attrInt(get, msgAttemptKeys, 1<<31-1); n > 1 {
		return int32(n - 1)
	}
	if v, ok := first(get, msgRedeliveredKeys); ok && strings.EqualFold(v, "true") {
		return 1
	}
	return 0
}
