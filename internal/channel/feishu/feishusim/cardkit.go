package feishusim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// CardKit paths the simulator serves: card entities, the streamed text
// of their elements and their settings.
const (
	PathCards = "/open-apis/cardkit/v1/cards"
)

// CardKit codes the simulator answers with. CodeScopeMissing is the
// platform's answer to an app without the API's scope; the others are
// the simulator's own choice for what the platform refuses in its own
// words (the reference does not list CardKit's codes).
const (
	CodeScopeMissing      = 99991672 // the app lacks a scope the API needs
	CodeCardNotFound      = 300301   // no card entity with that id
	CodeElementNotFound   = 300302   // no element with that id in the card
	CodeStreamingClosed   = 300309   // the card is not in streaming mode
	CodeSequenceNotRising = 300317   // sequence not above the last one
)

// cardKitScope is the scope CardKit's APIs ask for.
const cardKitScope = "cardkit:card:write"

// Card is one card entity the bot created, with everything done to it.
type Card struct {
	ID string
	// Data is the card JSON it was created with.
	Data string
	// Streaming reports whether the card is in streaming mode now.
	Streaming bool
	// Elements is each markdown or plain_text element's text now, by
	// element_id.
	Elements map[string]string
	// Updates are the element text updates the card took, in order;
	// Settings its settings updates.
	Updates  []CardUpdate
	Settings []CardSettings
	Created  time.Time
}

// CardUpdate is one streamed update of an element's text.
type CardUpdate struct {
	ElementID string
	Content   string
	Sequence  int
	UUID      string
	Time      time.Time
}

// CardSettings is one settings update of a card.
type CardSettings struct {
	Settings string
	Sequence int
	UUID     string
	// Streaming is the streaming mode the update left the card in.
	Streaming bool
	Time      time.Time
}

// cardEntity is a card's state in the simulator.
type cardEntity struct {
	Card
	lastSeq int
	uuids   map[string]bool
}

// RefuseCardKit makes every CardKit API answer as it does for an app
// without the cardkit:card:write scope (on), or serve again (off).
func (s *Sim) RefuseCardKit(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cardKitRefused = on
}

// EndStreaming takes the card out of streaming mode, as the platform does
// to a card left streaming too long.
func (s *Sim) EndStreaming(cardID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, known := s.cards[cardID]
	if !known {
		return fmt.Errorf("feishusim: end streaming: unknown card %q", cardID)
	}
	c.Streaming = false
	return nil
}

// Cards returns the card entities the bot created, oldest first.
func (s *Sim) Cards() []Card {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Card, 0, len(s.cardOrder))
	for _, id := range s.cardOrder {
		c := s.cards[id].Card
		c.Elements = make(map[string]string, len(s.cards[id].Elements))
		for k, v := range s.cards[id].Elements {
			c.Elements[k] = v
		}
		c.Updates = append([]CardUpdate(nil), c.Updates...)
		c.Settings = append([]CardSettings(nil), c.Settings...)
		out = append(out, c)
	}
	return out
}

// matchCardKit finds the CardKit endpoint of a path (see match).
func matchCardKit(path string) (routes []route, params []string, found bool) {
	if path == PathCards {
		return []route{{http.MethodPost, (*Sim).createCard}}, nil, true
	}
	params = strings.Split(strings.TrimPrefix(path, PathCards+"/"), "/")
	switch {
	case params[0] == "":
		return nil, nil, false
	case len(params) == 1 && params[0] == "id_convert":
		return []route{{http.MethodPost, (*Sim).cardIDConvert}}, params, true
	case len(params) == 2 && params[1] == "settings":
		return []route{{http.MethodPatch, (*Sim).cardSettings}}, params, true
	case len(params) == 4 && params[1] == "elements" && params[2] != "" && params[3] == "content":
		return []route{{http.MethodPut, (*Sim).cardContent}}, params, true
	}
	return nil, nil, false
}

// cardKitRefusal is the answer of an app without CardKit's scope.
func cardKitRefusal() *answer {
	return fail(http.StatusBadRequest, CodeScopeMissing,
		"Access denied. One of the following scopes is required: ["+cardKitScope+"]. 应用尚未开通所需的应用身份权限：["+cardKitScope+"]")
}

// cardJSON is what the simulator reads of a card JSON 2.0.
type cardJSON struct {
	Schema string `json:"schema"`
	Config struct {
		StreamingMode bool `json:"streaming_mode"`
	} `json:"config"`
	Body struct {
		Elements []struct {
			Tag       string `json:"tag"`
			ElementID string `json:"element_id"`
			Content   string `json:"content"`
		} `json:"elements"`
	} `json:"body"`
}

// createCard serves POST /open-apis/cardkit/v1/cards.
func (s *Sim) createCard(q *request) *answer {
	if s.cardKitRefused {
		return cardKitRefusal()
	}
	var req struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	if req.Type != "card_json" {
		return invalidField("type: want card_json, got %q", req.Type)
	}
	if len(req.Data) > maxRichContent {
		return failCode(CodeContentTooLong)
	}
	var card cardJSON
	if err := json.Unmarshal([]byte(req.Data), &card); err != nil {
		return invalidField("data: %v", err)
	}
	if card.Schema != "2.0" {
		return invalidField("data: schema: want 2.0, got %q", card.Schema)
	}
	elements := map[string]string{}
	for i, el := range card.Body.Elements {
		if el.ElementID == "" {
			continue
		}
		if _, dup := elements[el.ElementID]; dup {
			return invalidField("data: body.elements[%d]: element_id %q used twice", i, el.ElementID)
		}
		elements[el.ElementID] = el.Content
	}
	s.cardSeq++
	id := fmt.Sprintf("7%018d", s.cardSeq)
	if s.cards == nil {
		s.cards = map[string]*cardEntity{}
	}
	s.cards[id] = &cardEntity{
		Card:  Card{ID: id, Data: req.Data, Streaming: card.Config.StreamingMode, Elements: elements, Created: q.now},
		uuids: map[string]bool{},
	}
	s.cardOrder = append(s.cardOrder, id)
	return ok(struct {
		CardID string `json:"card_id"`
	}{id})
}

// stepReq is what every update of a card carries besides its change.
type stepReq struct {
	UUID     string `json:"uuid"`
	Sequence int    `json:"sequence"`
}

// cardUpdate decodes an update of the card q names into req, whose
// stepReq is step, and checks the step (see cardStep): it returns the
// card to change, or the answer to give instead (a failure, or success
// for a uuid the card took already).
func (s *Sim) cardUpdate(q *request, req any, step *stepReq) (*cardEntity, *answer) {
	if a := decodeBody(q, req); a != nil {
		return nil, a
	}
	c, done, a := s.cardStep(q.params[0], step.UUID, step.Sequence)
	switch {
	case a != nil:
		return nil, a
	case done:
		return nil, ok(struct{}{})
	}
	return c, nil
}

// took records that the card took an update: its sequence and its uuid.
func (c *cardEntity) took(st stepReq) {
	c.lastSeq = st.Sequence
	if st.UUID != "" {
		c.uuids[st.UUID] = true
	}
}

// cardStep checks what every update of a card checks: the card, its
// uuid (a uuid it took already answers success and changes nothing) and
// its sequence. done reports a repeated uuid.
func (s *Sim) cardStep(id, uuid string, seq int) (c *cardEntity, done bool, a *answer) {
	if s.cardKitRefused {
		return nil, false, cardKitRefusal()
	}
	c, known := s.cards[id]
	if !known {
		return nil, false, fail(http.StatusBadRequest, CodeCardNotFound, "card not found: "+id)
	}
	if len(uuid) > 64 {
		return nil, false, invalidField("uuid: at most 64 characters")
	}
	if uuid != "" && c.uuids[uuid] {
		return c, true, nil
	}
	if seq < 1 {
		return nil, false, invalidField("sequence: want a positive integer, got %d", seq)
	}
	if seq <= c.lastSeq {
		return nil, false, fail(http.StatusBadRequest, CodeSequenceNotRising,
			fmt.Sprintf("sequence number compare failed: %d is not above %d", seq, c.lastSeq))
	}
	return c, false, nil
}

// cardContent serves PUT
// /open-apis/cardkit/v1/cards/:card_id/elements/:element_id/content.
func (s *Sim) cardContent(q *request) *answer {
	var req struct {
		stepReq
		Content string `json:"content"`
	}
	c, a := s.cardUpdate(q, &req, &req.stepReq)
	if a != nil {
		return a
	}
	el := q.params[2]
	if _, known := c.Elements[el]; !known {
		return fail(http.StatusBadRequest, CodeElementNotFound, "element not found: "+el)
	}
	if !c.Streaming {
		return fail(http.StatusBadRequest, CodeStreamingClosed, "the card is not in streaming mode")
	}
	if len(req.Content) > maxRichContent {
		return failCode(CodeContentTooLong)
	}
	c.took(req.stepReq)
	c.Elements[el] = req.Content
	c.Updates = append(c.Updates, CardUpdate{ElementID: el, Content: req.Content, Sequence: req.Sequence, UUID: req.UUID, Time: q.now})
	return ok(struct{}{})
}

// cardSettings serves PATCH /open-apis/cardkit/v1/cards/:card_id/settings.
func (s *Sim) cardSettings(q *request) *answer {
	var req struct {
		stepReq
		Settings string `json:"settings"`
	}
	c, a := s.cardUpdate(q, &req, &req.stepReq)
	if a != nil {
		return a
	}
	var settings struct {
		Config *struct {
			StreamingMode *bool `json:"streaming_mode"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(req.Settings), &settings); err != nil {
		return invalidField("settings: %v", err)
	}
	c.took(req.stepReq)
	if settings.Config != nil && settings.Config.StreamingMode != nil {
		c.Streaming = *settings.Config.StreamingMode
	}
	c.Settings = append(c.Settings, CardSettings{Settings: req.Settings, Sequence: req.Sequence, UUID: req.UUID, Streaming: c.Streaming, Time: q.now})
	return ok(struct{}{})
}

// cardIDConvert serves POST /open-apis/cardkit/v1/cards/id_convert: the
// card entity a message shows.
func (s *Sim) cardIDConvert(q *request) *answer {
	if s.cardKitRefused {
		return cardKitRefusal()
	}
	var req struct {
		MessageID string `json:"message_id"`
	}
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	r, known := s.msgs[req.MessageID]
	if !known {
		return failCode(CodeDeleted)
	}
	id := cardIDOf(r.m.CardContent)
	if _, shown := s.cards[id]; !shown {
		return fail(http.StatusBadRequest, CodeCardNotFound, "the message shows no card entity: "+req.MessageID)
	}
	return ok(struct {
		CardID string `json:"card_id"`
	}{id})
}

// cardIDOf is the card entity an interactive message's content names,
// "" for none.
func cardIDOf(content string) string {
	var ref struct {
		Type string `json:"type"`
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	if json.Unmarshal([]byte(content), &ref) != nil || ref.Type != "card" {
		return ""
	}
	return ref.Data.CardID
}

// checkCardMessage checks the content of an interactive message that
// shows a card entity ({"type":"card","data":{"card_id":…}}): the card
// must exist.
func (s *Sim) checkCardMessage(content string) *answer {
	id := cardIDOf(content)
	if id == "" {
		return nil
	}
	if _, known := s.cards[id]; !known {
		return fail(http.StatusBadRequest, CodeInvalidParam, "card_id not found: "+id)
	}
	return nil
}
