package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/store/postgres/pgtest"
)

// natsServer is an embedded nats-server with JetStream on loopback, for
// the cluster's processes to meet on.
type natsServer struct {
	t    *testing.T
	dir  string
	port int
	s    *server.Server
}

func startNATS(t *testing.T) *natsServer {
	t.Helper()
	n := &natsServer{t: t, dir: t.TempDir(), port: -1}
	n.start()
	n.port = n.s.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() { n.s.Shutdown() })
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.dir, NoLog: true, NoSigs: true})
	if err != nil {
		n.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		n.t.Fatal("nats-server did not start")
	}
	n.s = s
}

func (n *natsServer) url() string { return n.s.ClientURL() }

// clusterConfig is the configuration of instance name of a cluster on
// nats and the PostgreSQL schema dsn names.
func clusterConfig(name, natsURL, model, wsURL string, extra string) string {
	return freePortConfig(`
		store: { driver: 'postgres', dsn: '${PINCER_PG_DSN}' },
		cluster: { instance: '` + name + `', nats: { url: '` + natsURL + `' }, partitions: 8, leaseTtlMs: 1500 },
		models: { providers: { openai: { baseUrl: '` + model + `/v1', apiKey: 'k' } } },
		agents: { defaults: { model: { primary: 'openai/m' }, maxConcurrent: 32 } },
		messages: { queue: { mode: 'followup' } },
		log: { level: 'info' },
		channels: { webchat: { enabled: false }, onebot: {
			wsUrl: '` + wsURL + `', selfId: 3300000001,
			reconnect: { minDelayMs: 200, maxDelayMs: 500 },` + extra + `
		} },`)
}

// clusterHealth is an instance's cluster component on /healthz.
func clusterHealth(base string) (status, reason string) {
	res, err := http.Get(base + "/healthz")
	if err != nil {
		return "", err.Error()
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var h struct {
		Components []struct{ Name, Status, Reason string } `json:"components"`
	}
	_ = json.Unmarshal(body, &h)
	for _, c := range h.Components {
		if c.Name == "cluster" {
			return c.Status, c.Reason
		}
	}
	return "", string(body)
}

// owned is how many partitions an instance says it owns.
func owned(base string) int {
	_, reason := clusterHealth(base)
	var inst string
	var members, n, of int
	if _, err := fmt.Sscanf(reason, "instance %s of %d, owns %d of %d partitions", &inst, &members, &n, &of); err != nil {
		return -1
	}
	return n
}

// waitShared waits until the running instances own every partition
// between them, each some.
func waitShared(t *testing.T, ctx context.Context, parts int, procs ...*proc) {
	t.Helper()
	for {
		sum, each := 0, true
		for _, p := range procs {
			n := owned(p.url)
			sum += max(n, 0)
			each = each && n > 0
		}
		if sum == parts && each {
			return
		}
		select {
		case <-ctx.Done():
			var says []string
			for _, p := range procs {
				_, reason := clusterHealth(p.url)
				says = append(says, reason)
			}
			t.Fatalf("the partitions were never shared out (%d owned): %q", sum, says)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startCluster starts a pincer serve for each name, configured by
// config(name), in the order given; each is killed when the test ends, and
// its log shown when the test failed. Their url is the gateway's (the
// ready line of a pincer without the web chat names the dashboard).
func startCluster(t *testing.T, names []string, config func(name string) string) []*proc {
	t.Helper()
	var procs []*proc
	for _, name := range names {
		p, _ := startServe(t, t.TempDir(), config(name))
		p.url = strings.TrimSuffix(p.url, "/dashboard")
		procs = append(procs, p)
		t.Cleanup(func() {
			_ = p.cmd.Process.Kill()
			if t.Failed() {
				t.Logf("pincer %s's log:\n%s", name, p.stderr)
			}
		})
	}
	return procs
}

// startQQCluster starts a NATS server, a model answering reply, a QQ
// implementation and two pincers in a cluster on them (the database is
// PINCER_PG_DSN's), and waits until one holds the connection and the
// partitions are shared.
func startQQCluster(t *testing.T, ctx context.Context, reply llmtest.Reply) (*natsServer, *llmtest.Server, *qqWorld, []*proc) {
	t.Helper()
	nats := startNATS(t)
	model := llmtest.NewOpenAI(t)
	model.Script(reply)
	w := newQQWorld(t)
	procs := startCluster(t, []string{"a", "b"}, func(name string) string {
		return clusterConfig(name, nats.url(), model.URL, w.peer.URL, "")
	})
	waitLink(t, ctx, w)
	waitShared(t, ctx, 8, procs...)
	return nats, model, w, procs
}

// holderOf is the index of the instance that says it holds conn ("QQ
// connection", "Feishu long connection").
func holderOf(t *testing.T, procs []*proc, conn string) int {
	t.Helper()
	for i, p := range procs {
		if strings.Contains(p.stderr.String(), "holding the "+conn) {
			return i
		}
	}
	t.Fatalf("no instance says it holds the %s", conn)
	return -1
}

// mentions sends @s of the bot, each in a group of its own, and keeps
// their ids for qqWorld.tally.
type mentions struct {
	w   *qqWorld
	ids []int64
}

// send sends n @s, ids from on.
func (m *mentions) send(t *testing.T, ctx context.Context, from, n int64) {
	t.Helper()
	for id := from; id < from+n; id++ {
		m.ids = append(m.ids, id)
		if err := m.w.peer.Push(ctx, m.w.mention(id, 700000000+id)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClusterKillMidBurst is the cluster's promise under load: three
// pincers share one PostgreSQL database and one NATS server; the one
// holding the QQ connection is killed with SIGKILL halfway through a
// burst of chatter and mentions in ten groups, with realtime windows and
// digest windows open on every instance. The others take the connection
// and its chats over; every mention that was taken in, before the kill or
// after, is answered exactly once, every chat's log keeps the order the
// messages were sent in, and every message taken in is in exactly one
// digest.
func TestClusterKillMidBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three pincers")
	}
	const (
		groups   = 10
		total    = 1200
		killAt   = 600
		every    = 41
		interval = 5000 // digest interval, ms
	)
	dsn := pgtest.SchemaDSN(t)
	t.Setenv("PINCER_PG_DSN", dsn)
	nats := startNATS(t)
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"好"}})
	w := newQQWorld(t)
	extra := `
			receive: {
				realtime: { windowMs: 300 },
				digest: { enabled: true, intervalMs: ` + strconv.Itoa(interval) + `, minMessages: 1, maxMessages: 1000, maxTranscriptChars: 1000000 },
			},`
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	names := []string{"a", "b", "c"}
	procs := startCluster(t, names, func(name string) string {
		return clusterConfig(name, nats.url(), model.URL, w.peer.URL, extra)
	})
	waitLink(t, ctx, w)
	waitShared(t, ctx, 8, procs...)
	holder := holderOf(t, procs, "QQ connection")

	burst := newBurst(total, groups, every)
	for _, s := range burst[:killAt] {
		if err := w.peer.Push(ctx, w.burstFrame(s)); err != nil {
			t.Fatal(err)
		}
	}
	killed := time.Now()
	if err := procs[holder].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = procs[holder].cmd.Wait()
	alive := slices.Delete(slices.Clone(procs), holder, holder+1)
	waitLink(t, ctx, w)
	t.Logf("instance %s held the connection and was killed; another held it %v later", names[holder], time.Since(killed).Round(time.Millisecond))
	waitShared(t, ctx, 8, alive...)
	for _, s := range burst[killAt:] {
		if err := w.peer.Push(ctx, w.burstFrame(s)); err != nil {
			t.Fatal(err)
		}
	}

	// What the cluster took in: the shared log, read from the database.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	logged := func() (map[int64]bool, map[string][]int64) {
		ids, byChat := map[int64]bool{}, map[string][]int64{}
		rows, err := conn.Query(ctx, `SELECT chat, message_id FROM messages ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var chat, id string
			if err := rows.Scan(&chat, &id); err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.ParseInt(id, 10, 64)
			if ids[n] {
				t.Errorf("message %d is logged twice", n)
			}
			ids[n] = true
			byChat[chat] = append(byChat[chat], n)
		}
		return ids, byChat
	}
	taken := func(s burstMsg, in map[int64]bool) bool { return s.id > killAt || in[s.id] }

	answered := func(in map[int64]bool) (int, int, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		n, want, bad := 0, 0, ""
		for _, s := range burst {
			if !s.trigger {
				continue
			}
			id := strconv.FormatInt(s.id, 10)
			c := w.replies[id]
			if !taken(s, in) {
				if c > 0 {
					bad += fmt.Sprintf(" %s (not taken in) answered %d times;", id, c)
				}
				continue
			}
			want++
			switch {
			case c == 1:
				n++
			case c > 1:
				bad += fmt.Sprintf(" %s answered %d times;", id, c)
			}
		}
		return n, want, bad
	}
	digested := func() map[int64]int { return digestCounts(model, burst) }
	for {
		in, _ := logged()
		n, want, bad := answered(in)
		if bad != "" {
			t.Fatalf("replies:%s", bad)
		}
		counts := digested()
		done := n == want
		for _, s := range burst {
			if !s.trigger && taken(s, in) && counts[s.id] == 0 {
				done = false
			}
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d mentions answered, %d messages digested", n, want, len(counts))
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, p := range alive {
		waitMetric(t, ctx, p.url, "pincer_outbox_pending 0")
	}
	in, byChat := logged()
	if _, _, bad := answered(in); bad != "" {
		t.Errorf("replies:%s", bad)
	}
	for id, n := range digested() {
		if n > 1 {
			t.Errorf("message %d is in %d digests", id, n)
		}
	}
	// Every chat's log is in the order its messages were sent, across the
	// takeover, and only the newest before the kill can be missing.
	for chat, ids := range byChat {
		for i := 1; i < len(ids); i++ {
			if ids[i] < ids[i-1] {
				t.Errorf("chat %q: message %d logged after %d", chat, ids[i], ids[i-1])
			}
		}
	}
	missing := onlyNewestMissing(t, burst[:killAt], in)
	t.Logf("%d of the %d messages sent before the kill were taken in; every mention taken in answered once, every message in one digest", killAt-missing, killAt)
}

// stop shuts the NATS server down; start brings it back on the same port
// and store.
func (n *natsServer) stop() { n.s.Shutdown(); n.s.WaitForShutdown() }

// TestClusterSurvivesNATSRestart: two pincers answer mentions; NATS
// restarts at once, with mentions arriving while it is down, and then
// stays down longer than a lease. Every mention that reached the
// connection's holder is answered exactly once: the short restart loses
// nothing (the holder publishes again what the stream did not take), and
// after the long one the instances win their leases back, the
// connection is opened again and the chats are answered again.
func TestClusterSurvivesNATSRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two pincers")
	}
	dsn := pgtest.SchemaDSN(t)
	t.Setenv("PINCER_PG_DSN", dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nats, _, w, procs := startQQCluster(t, ctx, llmtest.Reply{Text: []string{"好"}})
	sent := &mentions{w: w}
	sent.send(t, ctx, 1, 20)
	w.waitReplies(t, ctx, 20)

	// A restart at once: the mentions pushed meanwhile reach the holder,
	// whose stream is gone for a moment.
	nats.stop()
	sent.send(t, ctx, 21, 10)
	nats.start()
	w.waitReplies(t, ctx, 10)
	w.tally(t, sent.ids)

	// Down for longer than a lease: the holder lets the connection go.
	nats.stop()
	select {
	case <-w.peer.Called(): // drain what was called before
	default:
	}
	for w.peer.Conns() > 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the holder kept the connection without NATS")
		case <-time.After(50 * time.Millisecond):
		}
	}
	nats.start()
	waitLink(t, ctx, w)
	waitShared(t, ctx, 8, procs...)
	sent.send(t, ctx, 31, 20)
	w.waitReplies(t, ctx, 20)
	w.tally(t, sent.ids)
}

// TestClusterSurvivesAPostgreSQLOutage: two pincers reach PostgreSQL
// through a link the test cuts for a few seconds while mentions arrive.
// The failures are logged, and once the database is back every mention
// is answered exactly once: a partition whose writes failed is read
// again from its last message the database committed.
func TestClusterSurvivesAPostgreSQLOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two pincers")
	}
	dsn := pgtest.SchemaDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	link := newLinkProxy(t, u.Host)
	u.Host = link.ln.Addr().String()
	t.Setenv("PINCER_PG_DSN", u.String())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, _, w, procs := startQQCluster(t, ctx, llmtest.Reply{Text: []string{"好"}})
	sent := &mentions{w: w}
	sent.send(t, ctx, 1, 10)
	w.waitReplies(t, ctx, 10)

	link.cut()
	sent.send(t, ctx, 11, 10)
	// The instances notice: a write or a look-up fails.
	for !strings.Contains(procs[0].stderr.String()+procs[1].stderr.String(), "read again") {
		select {
		case <-ctx.Done():
			t.Fatal("no instance noticed the database was gone")
		case <-time.After(50 * time.Millisecond):
		}
	}
	link.restore()
	w.waitReplies(t, ctx, 10)
	sent.send(t, ctx, 21, 10)
	w.waitReplies(t, ctx, 10)
	for _, p := range procs {
		waitMetric(t, ctx, p.url, "pincer_outbox_pending 0")
	}
	w.tally(t, sent.ids)
}

// TestClusterHandsOverOnSIGTERM: the instance holding the connection is
// stopped with SIGTERM while the turns of 20 mentions are running, the
// model holding its answers; it exits cleanly, the other takes the
// connection and every chat over at once, its turns cut there are run
// again here, and every mention, those and 20 sent after, is answered
// exactly once.
func TestClusterHandsOverOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two pincers")
	}
	t.Setenv("PINCER_PG_DSN", pgtest.SchemaDSN(t))
	hold := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, model, w, procs := startQQCluster(t, ctx, llmtest.Reply{Text: []string{"好", "的"}, Hold: hold})
	holder := holderOf(t, procs, "QQ connection")
	other := 1 - holder
	sent := &mentions{w: w}
	sent.send(t, ctx, 1, 20)
	// Every mention is taken in and its turn is running (a mention still
	// in the socket when a connection closes is lost to any client).
	waitCalls(t, ctx, model, 20)
	stopped := time.Now()
	if err := procs[holder].stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	close(hold)
	waitLink(t, ctx, w)
	t.Logf("the connection was held again %v after the SIGTERM", time.Since(stopped).Round(time.Millisecond))
	waitShared(t, ctx, 8, procs[other])
	sent.send(t, ctx, 21, 20)
	for {
		w.mu.Lock()
		n := 0
		for _, id := range sent.ids {
			if w.replies[strconv.FormatInt(id, 10)] > 0 {
				n++
			}
		}
		w.mu.Unlock()
		if n == len(sent.ids) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d mentions answered", n, len(sent.ids))
		case <-w.replied:
		}
	}
	waitMetric(t, ctx, procs[other].url, "pincer_outbox_pending 0")
	w.tally(t, sent.ids)
}

// startFeishuCluster starts a simulated Feishu open platform with a
// group chat for each of groups and user in it, a NATS server, a model
// answering every turn, and two pincers in a cluster on them (the database
// is a PostgreSQL schema of the test's own); feishu is what
// channels.feishu holds besides the app and the platform (the mode and
// its settings). It waits until the partitions are shared.
func startFeishuCluster(t *testing.T, ctx context.Context, encryptKey string, groups []string, user, feishu string) (*feishusim.Sim, *llmtest.Server, []*proc) {
	t.Helper()
	sim, platform := feishuPlatform(t, encryptKey, groups[0], map[string]string{user: "张三"})
	for _, g := range groups[1:] {
		if err := sim.AddChat(g, feishusim.ChatGroup); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PINCER_PG_DSN", pgtest.SchemaDSN(t))
	nats := startNATS(t)
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"收到，马上处理。"}})
	procs := startCluster(t, []string{"a", "b"}, func(name string) string {
		return freePortConfig(fmt.Sprintf(`
			store: { driver: 'postgres', dsn: '${PINCER_PG_DSN}' },
			cluster: { instance: '%s', nats: { url: '%s' }, partitions: 8, leaseTtlMs: 1500 },
			models: { providers: { openai: { baseUrl: '%s/v1', apiKey: 'k' } } },
			agents: { defaults: { model: { primary: 'openai/m' } } },
			log: { level: 'info' },
			channels: { webchat: { enabled: false }, feishu: {
			  appId: '%s', appSecret: '%s', domain: '%s', streaming: 'off',
			  receive: { realtime: { windowMs: 50 } }, %s
			} },`, name, nats.url(), model.URL, feishusim.DefaultAppID, feishusim.DefaultAppSecret, platform, feishu))
	})
	waitShared(t, ctx, 8, procs...)
	return sim, model, procs
}

// feishuMention is an @ of the bot by user in chat.
func feishuMention(id, chat, user string) feishusim.Message {
	return feishusim.Message{
		ID: id, ChatID: chat, SenderID: user,
		Mentions: []feishusim.Mention{{Key: "@_user_1", ID: feishusim.DefaultBotOpenID, Name: feishusim.DefaultBotName}},
		Content:  `{"text":"@_user_1 服务器是不是挂了？"}`,
	}
}

// awaitOneReplyEach waits until each of the messages asked got exactly
// one reply quoting it and the platform has no other; a second reply to
// one fails the test at once.
func awaitOneReplyEach(t *testing.T, ctx context.Context, sim *feishusim.Sim, asked []string) {
	t.Helper()
	for {
		replied := map[string]int{}
		for _, s := range sim.Sent() {
			replied[s.ReplyTo]++
		}
		done := true
		for _, id := range asked {
			if replied[id] > 1 {
				t.Fatalf("%s answered %d times", id, replied[id])
			}
			done = done && replied[id] == 1
		}
		if done && len(sim.Sent()) == len(asked) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("replies %v for %v", replied, asked)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestClusterFeishuWebhookReachesAnyInstance: two pincers answer one
// Feishu app in webhook mode behind what would be a load balancer. Each
// group's mention is posted to one instance and delivered again (the
// same event) to the other; each is answered once, by its chat's owner,
// through the open platform, whichever instance the event reached.
func TestClusterFeishuWebhookReachesAnyInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two pincers")
	}
	const key = "an-encrypt-key"
	groups := []string{"oc_cluster0000000000000000000001", "oc_cluster0000000000000000000002", "oc_cluster0000000000000000000003", "oc_cluster0000000000000000000004", "oc_cluster0000000000000000000005", "oc_cluster0000000000000000000006"}
	const user = "ou_cluster000000000000000000000a"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sim, model, procs := startFeishuCluster(t, ctx, key, groups, user,
		fmt.Sprintf(`mode: 'webhook', verificationToken: '%s', encryptKey: '%s',`, feishusim.DefaultVerificationToken, key))
	var asked []string
	for i, g := range groups {
		m := feishuMention(fmt.Sprintf("om_cluster_%d", i), g, user)
		first := postFeishu(t, ctx, sim, procs[i%2].url, m)
		// The same event again, at the other instance.
		if d, err := sim.PostEvent(ctx, procs[(i+1)%2].url+"/feishu/events", m.ID, feishusim.EventOptions{EventID: first.EventID}); err != nil || d.Status != 200 {
			t.Fatalf("redelivery to the other instance: %v %+v", err, d)
		}
		asked = append(asked, m.ID)
	}
	awaitOneReplyEach(t, ctx, sim, asked)
	for _, p := range procs {
		waitMetric(t, ctx, p.url, "pincer_outbox_pending 0")
	}
	if n := len(sim.Sent()); n != len(asked) {
		t.Errorf("%d replies for %d mentions", n, len(asked))
	}
	if n := len(model.Requests()); n != len(asked) {
		t.Errorf("%d model requests for %d mentions", n, len(asked))
	}
}

// TestClusterFeishuLongConnectionMovesToTheSurvivor: two pincers on one
// Feishu app in long-connection mode; exactly one holds the long
// connection, and every @ it takes in is answered once, whichever
// instance owns the chat. After the holder is killed, the other opens
// the long connection and answers the @s pushed then.
func TestClusterFeishuLongConnectionMovesToTheSurvivor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two pincers")
	}
	groups := []string{"oc_longconn00000000000000000001", "oc_longconn00000000000000000002", "oc_longconn00000000000000000003", "oc_longconn00000000000000000004"}
	const user = "ou_longconn0000000000000000000a"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sim, _, procs := startFeishuCluster(t, ctx, "", groups, user, `mode: 'websocket',`)
	if err := sim.WaitLongConn(ctx, func(conns, _, _ int) bool { return conns == 1 }); err != nil {
		t.Fatalf("no instance opened the long connection: %v", err)
	}
	var asked []string
	push := func(round int) {
		t.Helper()
		for i, g := range groups {
			m := feishuMention(fmt.Sprintf("om_longconn_%d_%d", round, i), g, user)
			d, err := sim.PushEvent(ctx, m, feishusim.EventOptions{})
			if err != nil || d.Status != 200 {
				t.Fatalf("push %s: %v %+v", m.ID, err, d)
			}
			asked = append(asked, m.ID)
		}
	}
	push(0)
	awaitOneReplyEach(t, ctx, sim, asked)
	if n := sim.Connections(); n != 1 {
		t.Fatalf("%d long connections, want the one holder's", n)
	}

	holder := holderOf(t, procs, "Feishu long connection")
	_ = procs[holder].cmd.Process.Kill()
	_ = procs[holder].cmd.Wait()
	survivor := procs[1-holder]
	if err := sim.WaitLongConn(ctx, func(conns, _, _ int) bool { return conns == 0 }); err != nil {
		t.Fatalf("the killed holder's long connection stayed open: %v", err)
	}
	if err := sim.WaitLongConn(ctx, func(conns, _, _ int) bool { return conns == 1 }); err != nil {
		t.Fatalf("the survivor did not open the long connection: %v", err)
	}
	waitShared(t, ctx, 8, survivor)
	push(1)
	awaitOneReplyEach(t, ctx, sim, asked)
	if !strings.Contains(survivor.stderr.String(), "holding the Feishu long connection") {
		t.Error("the survivor does not say it holds the long connection")
	}
}
