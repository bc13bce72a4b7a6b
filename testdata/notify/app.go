package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const (
	exchange             = "notify"
	sdktraceBatchTimeout = time.Second
)

// app is the running chain.
type app struct {
	cfg   Config
	set   settings
	tel   *telemetry
	flows *flows
	stats *queueStats
	rdb   *db

	gatewayURL string
	rightsURL  string
	client     *http.Client

	pub    *publisher // the gateway's publishing connection
	retry  *publisher // the consumers' retries
	conns  []*amqp.Connection
	broker *brokerWatch

	logMu  sync.Mutex
	logW   *bufio.Writer
	logF   *os.File
	logCh  chan string
	logWG  sync.WaitGroup
	closed bool
}

func start(ctx context.Context, c Config, s settings, tel *telemetry) (*app, error) {
	a := &app{
		cfg: c, set: s, tel: tel,
		flows:  newFlows(s.tasks),
		stats:  newQueueStats(s.tasks),
		rdb:    newDB(c.DBSlots, c.DBQuery, c.DBSlow, c.DBWaitCap),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512}},
	}
	if err := a.declare(); err != nil {
		return nil, err
	}
	var err error
	if a.broker, err = a.watchBroker(ctx); err != nil {
		return nil, err
	}
	if a.pub, err = a.newPublisher("gateway", 8); err != nil {
		return nil, err
	}
	if a.retry, err = a.newPublisher("retry", 4); err != nil {
		return nil, err
	}
	if s.localLog {
		if err := a.startLocalLog(); err != nil {
			return nil, err
		}
	}
	rights, err := serve(a.rightsHandler())
	if err != nil {
		return nil, err
	}
	a.rightsURL = rights
	gw, err := serve(a.gatewayHandler())
	if err != nil {
		return nil, err
	}
	a.gatewayURL = gw
	for i, q := range s.tasks {
		for k := range c.Consumers {
			seed := c.Seed*1000 + uint64(i*100+k)
			if err := a.consume(q, k, rand.New(rand.NewPCG(seed, 0x6e6f74696679))); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// dial opens a named connection to the broker.
func (a *app) dial(name string) (*amqp.Connection, error) {
	cfg := amqp.Config{Properties: amqp.Table{"connection_name": "notify-" + name}, Heartbeat: 10 * time.Second}
	conn, err := amqp.DialConfig(a.cfg.AMQP, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", name, err)
	}
	a.conns = append(a.conns, conn)
	return conn, nil
}

// declare sets up the exchange and queues of the mode, from nothing: the
// queues of both modes are deleted first.
func (a *app) declare() error {
	conn, err := a.dial("setup")
	if err != nil {
		return err
	}
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	for _, q := range []string{"rights", "points", "sms", "push", "log"} {
		for _, name := range []string{q, q + ".delay"} {
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				return fmt.Errorf("delete queue %s: %w", name, err)
			}
		}
	}
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeDirect, false, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange: %w", err)
	}
	for _, q := range a.set.tasks {
		args := amqp.Table{}
		if a.set.maxLength > 0 {
			args["x-max-length"] = int32(a.set.maxLength)
			args["x-overflow"] = "drop-head"
		}
		if _, err := ch.QueueDeclare(q, false, false, false, false, args); err != nil {
			return fmt.Errorf("declare queue %s: %w", q, err)
		}
		if err := ch.QueueBind(q, q, exchange, false, nil); err != nil {
			return fmt.Errorf("bind queue %s: %w", q, err)
		}
		if a.set.delay > 0 {
			// The delay queue: a retry waits here for its TTL, then is
			// dead-lettered back to the work queue (RabbitMQ adds x-death).
			dargs := amqp.Table{
				"x-message-ttl":             int32(a.set.delay / time.Millisecond),
				"x-dead-letter-exchange":    exchange,
				"x-dead-letter-routing-key": q,
			}
			if _, err := ch.QueueDeclare(q+".delay", false, false, false, false, dargs); err != nil {
				return fmt.Errorf("declare queue %s.delay: %w", q, err)
			}
		}
	}
	return nil
}

// serve starts an HTTP server on a loopback port and returns its URL.
func serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, h)
	return "http://" + ln.Addr().String(), nil
}

// startLocalLog starts the after mode's log writer: the gateway hands it a
// line and goes on; a full buffer drops the line rather than wait.
func (a *app) startLocalLog() error {
	f, err := os.Create(a.cfg.LogFile)
	if err != nil {
		return err
	}
	a.logF, a.logW, a.logCh = f, bufio.NewWriter(f), make(chan string, 4096)
	a.logWG.Add(1)
	go func() {
		defer a.logWG.Done()
		for line := range a.logCh {
			a.logW.WriteString(line)
		}
		a.logW.Flush()
	}()
	return nil
}

func (a *app) logLocal(line string) {
	select {
	case a.logCh <- line:
	default:
	}
}

// close stops what can be stopped without waiting on a blocked broker.
func (a *app) close() {
	if a.logCh != nil {
		close(a.logCh)
		a.logWG.Wait()
		a.logF.Close()
	}
	a.broker.stop()
	done := make(chan struct{})
	go func() {
		for _, c := range a.conns {
			c.Close()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}
