package feishusim

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	larkcardkit "github.com/larksuite/oapi-sdk-go/v3/service/cardkit/v1"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

const streamingCardJSON = `{"schema":"2.0","config":{"update_multi":true,"streaming_mode":true},` +
	`"body":{"elements":[{"tag":"markdown","element_id":"md","content":"Hel"}]}}`

// createCard makes a streaming card through the SDK and returns its id.
func createCard(t *testing.T, e *env, data string) string {
	t.Helper()
	resp, err := e.client.Cardkit.V1.Card.Create(context.Background(), larkcardkit.NewCreateCardReqBuilder().
		Body(larkcardkit.NewCreateCardReqBodyBuilder().Type("card_json").Data(data).Build()).Build())
	must(t, err)
	if !resp.Success() || resp.Data == nil || str(resp.Data.CardId) == "" {
		t.Fatalf("create card: code %d %s", resp.Code, resp.Msg)
	}
	return str(resp.Data.CardId)
}

func streamText(t *testing.T, e *env, card, element, text string, seq int, uuid string) int {
	t.Helper()
	resp, err := e.client.Cardkit.V1.CardElement.Content(context.Background(), larkcardkit.NewContentCardElementReqBuilder().
		CardId(card).ElementId(element).
		Body(larkcardkit.NewContentCardElementReqBodyBuilder().Content(text).Sequence(seq).Uuid(uuid).Build()).Build())
	must(t, err)
	return resp.Code
}

func closeStreaming(t *testing.T, e *env, card string, seq int, uuid string) int {
	t.Helper()
	resp, err := e.client.Cardkit.V1.Card.Settings(context.Background(), larkcardkit.NewSettingsCardReqBuilder().
		CardId(card).
		Body(larkcardkit.NewSettingsCardReqBodyBuilder().Settings(`{"config":{"streaming_mode":false}}`).Sequence(seq).Uuid(uuid).Build()).Build())
	must(t, err)
	return resp.Code
}

func TestStreamingCardThroughTheSDK(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	card := createCard(t, e, streamingCardJSON)

	// The card is shown by an interactive message naming it.
	msg, err := e.client.Im.Message.Create(context.Background(), larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatGroup).MsgType("interactive").
			Content(`{"type":"card","data":{"card_id":"`+card+`"}}`).Build()).Build())
	must(t, err)
	if !msg.Success() {
		t.Fatalf("send card: code %d %s", msg.Code, msg.Msg)
	}

	conv, err := e.client.Cardkit.V1.Card.IdConvert(context.Background(), larkcardkit.NewIdConvertCardReqBuilder().
		Body(larkcardkit.NewIdConvertCardReqBodyBuilder().MessageId(str(msg.Data.MessageId)).Build()).Build())
	must(t, err)
	if !conv.Success() || str(conv.Data.CardId) != card {
		t.Errorf("id_convert of the card's message: code %d, card %q, want %s", conv.Code, str(conv.Data.CardId), card)
	}

	steps := []struct {
		text string
		seq  int
		uuid string
		code int
	}{
		{"Hello", 1, "u1", CodeOK},
		{"Hello, wor", 3, "u3", CodeOK},
		{"Hello, w", 2, "u2", CodeSequenceNotRising}, // late: its sequence is past
		{"Hello, wor", 3, "u3", CodeOK},              // a retry: changes nothing
		{"Hello, world", 4, "u4", CodeOK},
	}
	for _, s := range steps {
		if code := streamText(t, e, card, "md", s.text, s.seq, s.uuid); code != s.code {
			t.Errorf("update %q seq %d: code %d, want %d", s.text, s.seq, code, s.code)
		}
	}
	if code := streamText(t, e, card, "nope", "x", 5, "u5"); code != CodeElementNotFound {
		t.Errorf("unknown element: code %d", code)
	}
	if code := closeStreaming(t, e, card, 5, "c5"); code != CodeOK {
		t.Errorf("close streaming: code %d", code)
	}
	if code := streamText(t, e, card, "md", "after", 6, "u6"); code != CodeStreamingClosed {
		t.Errorf("update after streaming closed: code %d", code)
	}
	if code := closeStreaming(t, e, card, 5, "c5"); code != CodeOK {
		t.Errorf("a retried close: code %d", code)
	}

	cards := e.sim.Cards()
	if len(cards) != 1 {
		t.Fatalf("%d cards", len(cards))
	}
	c := cards[0]
	var history []string
	var seqs []int
	for _, u := range c.Updates {
		history, seqs = append(history, u.Content), append(seqs, u.Sequence)
	}
	if diff := cmp.Diff([]string{"Hello", "Hello, wor", "Hello, world"}, history); diff != "" {
		t.Errorf("content history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 3, 4}, seqs); diff != "" {
		t.Errorf("sequences (-want +got):\n%s", diff)
	}
	if c.Streaming || len(c.Settings) != 1 || c.Settings[0].Streaming || c.Settings[0].Sequence != 5 || c.Elements["md"] != "Hello, world" {
		t.Errorf("card after close: %+v", c)
	}
}

func TestCardKitRefusedAndUnknownCards(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	e.sim.RefuseCardKit(true)
	resp, err := e.client.Cardkit.V1.Card.Create(context.Background(), larkcardkit.NewCreateCardReqBuilder().
		Body(larkcardkit.NewCreateCardReqBodyBuilder().Type("card_json").Data(streamingCardJSON).Build()).Build())
	must(t, err)
	if resp.Code != CodeScopeMissing || resp.StatusCode != 400 {
		t.Errorf("refused create: HTTP %d code %d %s", resp.StatusCode, resp.Code, resp.Msg)
	}
	e.sim.RefuseCardKit(false)
	card := createCard(t, e, streamingCardJSON)
	e.sim.RefuseCardKit(true)
	if code := streamText(t, e, card, "md", "x", 1, "u1"); code != CodeScopeMissing {
		t.Errorf("refused update: code %d", code)
	}
	e.sim.RefuseCardKit(false)
	if code := streamText(t, e, "7000", "md", "x", 1, "u1"); code != CodeCardNotFound {
		t.Errorf("unknown card: code %d", code)
	}

	// A message cannot show a card that does not exist.
	msg, err := e.client.Im.Message.Create(context.Background(), larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatGroup).MsgType("interactive").
			Content(`{"type":"card","data":{"card_id":"7000"}}`).Build()).Build())
	must(t, err)
	if msg.Code != CodeInvalidParam {
		t.Errorf("a message of an unknown card: code %d", msg.Code)
	}
}

func TestTheBotRecallsItsMessage(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	sent := createText(t, e, "chat_id", chatGroup, "oops", "")
	id := str(sent.Data.MessageId)
	resp, err := e.client.Im.Message.Delete(context.Background(), larkim.NewDeleteMessageReqBuilder().MessageId(id).Build())
	must(t, err)
	if !resp.Success() {
		t.Fatalf("delete: code %d %s", resp.Code, resp.Msg)
	}
	if m, _ := e.sim.Message(id); !m.Deleted {
		t.Error("the message is not marked recalled")
	}
	resp, err = e.client.Im.Message.Delete(context.Background(), larkim.NewDeleteMessageReqBuilder().MessageId(id).Build())
	must(t, err)
	if resp.Code != CodeRecalled {
		t.Errorf("second delete: code %d", resp.Code)
	}
}
