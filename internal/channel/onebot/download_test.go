package onebot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/msg"
)

// filePeer is a peer whose gets fail for files it was not given.
func filePeer(t *testing.T) *onebottest.Peer {
	return onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		return nil, 100, "file not found"
	})
}

func attachment(kind msg.SegmentKind, url, id string) msg.Attachment {
	return msg.Attachment{Channel: ChannelID, Peer: group, Message: "42", Segment: msg.Segment{Kind: kind, URL: url, ID: id}}
}

func callsOf(p *onebottest.Peer, action string) []map[string]any {
	var out []map[string]any
	for _, c := range p.Calls() {
		if c.Action == action {
			var m map[string]any
			_ = json.Unmarshal(c.Params, &m)
			out = append(out, m)
		}
	}
	return out
}

var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestDownloadByURL(t *testing.T) {
	p := filePeer(t)
	var asked []string
	fetch := func(_ context.Context, url string, limit int64) (channel.Blob, error) {
		asked = append(asked, fmt.Sprintf("%s %d", url, limit))
		return channel.Blob{Data: png, MIME: "image/png"}, nil
	}
	a := NewAccount(AccountOptions{HTTPURL: p.HTTPURL, Fetch: fetch})
	u := "https://multimedia.nt.qq.com.cn/download?appid=1407&fileid=x&rkey=SECRET"
	b, err := a.Download(context.Background(), attachment(msg.SegImage, u, "A1.jpg"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Data, png) || b.MIME != "image/png" {
		t.Errorf("blob %+v", b)
	}
	if len(asked) != 1 || asked[0] != u+" 1000" {
		t.Errorf("fetched %q", asked)
	}
	if n := len(callsOf(p, "get_image")); n != 0 {
		t.Errorf("a URL that works needs no get_image (%d calls)", n)
	}
}

// TestDownloadFallsBackWhenTheURLExpired: the segment's URL answers 403
// once its rkey expired; get_image brings the content, as base64 or as a
// fresh URL.
func TestDownloadFallsBackWhenTheURLExpired(t *testing.T) {
	p := filePeer(t)
	a := NewAccount(AccountOptions{HTTPURL: p.HTTPURL})
	p.SetFile("A1.jpg", png, "image/png")
	p.SetFileAnswer("B2.jpg", onebottest.File{Data: []byte("GIF89a..."), MIME: "image/gif", NoBase64: true})
	stale1, stale2 := p.FileURL("A1.jpg"), p.FileURL("B2.jpg")
	p.ExpireURLs()

	b, err := a.Download(context.Background(), attachment(msg.SegImage, stale1, "A1.jpg"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Data, png) || b.MIME != "image/png" {
		t.Errorf("from base64: %+v", b)
	}
	b, err = a.Download(context.Background(), attachment(msg.SegImage, stale2, "B2.jpg"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Data) != "GIF89a..." || b.MIME != "image/gif" {
		t.Errorf("from the answer's fresh URL: %+v", b)
	}
	gets := callsOf(p, "get_image")
	if len(gets) != 2 || gets[0]["file"] != "A1.jpg" || gets[1]["file"] != "B2.jpg" {
		t.Errorf("get_image calls %v", gets)
	}
}

func TestDownloadVoiceAsMP3(t *testing.T) {
	p := filePeer(t)
	a := NewAccount(AccountOptions{HTTPURL: p.HTTPURL})
	mp3 := []byte("\xff\xfb\x90\x64 frames")
	p.SetFileAnswer("v1.amr", onebottest.File{Data: mp3, NoURL: true})
	b, err := a.Download(context.Background(), attachment(msg.SegVoice, "", "v1.amr"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Data, mp3) || b.MIME != "audio/mpeg" {
		t.Errorf("blob %+v", b)
	}
	gets := callsOf(p, "get_record")
	if len(gets) != 1 || gets[0]["file"] != "v1.amr" || gets[0]["out_format"] != "mp3" {
		t.Errorf("get_record calls %v", gets)
	}
}

// TestDownloadFilePathAnswer: the answer names a file on the
// implementation's host, which is this one.
func TestDownloadFilePathAnswer(t *testing.T) {
	p := filePeer(t)
	a := NewAccount(AccountOptions{HTTPURL: p.HTTPURL})
	local := writeFile(t, "cache-123", []byte("line one\nline two\n"))
	p.SetFileAnswer("/fid-1", onebottest.File{Data: []byte("unused"), Path: local, Name: "notes.txt", NoBase64: true, NoURL: true})
	b, err := a.Download(context.Background(), attachment(msg.SegFile, "", "/fid-1"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Data) != "line one\nline two\n" || b.Name != "notes.txt" || !strings.HasPrefix(b.MIME, "text/plain") {
		t.Errorf("blob %+v", b)
	}
	if gets := callsOf(p, "get_file"); len(gets) != 1 || gets[0]["file_id"] != "/fid-1" {
		t.Errorf("get_file calls %v", gets)
	}

	// A path that is not on this host (the implementation runs elsewhere)
	// and nothing else: the download fails, naming what was tried.
	p.SetFileAnswer("/fid-2", onebottest.File{Data: []byte("x"), NoBase64: true, NoURL: true})
	_, err = a.Download(context.Background(), attachment(msg.SegFile, "", "/fid-2"), 1<<20)
	if !errors.Is(err, errNothingToFetch) {
		t.Errorf("no readable source: %v", err)
	}
}

func TestDownloadTooLarge(t *testing.T) {
	p := filePeer(t)
	big := bytes.Repeat([]byte("x"), 100)
	local := writeFile(t, "big", big)
	p.SetFile("big.jpg", big, "image/jpeg")
	p.SetFileAnswer("big-path.jpg", onebottest.File{Data: big, Path: local, NoBase64: true, NoURL: true})
	plain := NewAccount(AccountOptions{HTTPURL: p.HTTPURL})
	huge := NewAccount(AccountOptions{HTTPURL: p.HTTPURL, Fetch: func(context.Context, string, int64) (channel.Blob, error) {
		return channel.Blob{Data: big}, nil // a fetcher that ignores the limit
	}})
	for name, c := range map[string]struct {
		a   *Account
		att msg.Attachment
	}{
		"url":         {plain, attachment(msg.SegImage, p.FileURL("big.jpg"), "big.jpg")},
		"base64":      {plain, attachment(msg.SegImage, "", "big.jpg")},
		"file path":   {plain, attachment(msg.SegImage, "", "big-path.jpg")},
		"loose fetch": {huge, attachment(msg.SegImage, "https://example.invalid/x.jpg", "")},
	} {
		_, err := c.a.Download(context.Background(), c.att, 99)
		if !errors.Is(err, channel.ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", name, err)
		}
	}
	if n := len(callsOf(p, "get_image")); n != 2 {
		t.Errorf("content too large at its URL is not asked for again: %d get_image calls, want 2", n)
	}
	if _, err := plain.Download(context.Background(), attachment(msg.SegImage, p.FileURL("big.jpg"), "big.jpg"), 100); err != nil {
		t.Errorf("content of exactly the limit: %v", err)
	}
}

func TestDownloadErrorsHideTheRkey(t *testing.T) {
	p := filePeer(t)
	p.SetFile("A1.jpg", png, "image/png")
	stale := p.FileURL("A1.jpg")
	p.ExpireURLs()
	guarded := func(_ context.Context, url string, _ int64) (channel.Blob, error) {
		return channel.Blob{}, fmt.Errorf("refusing %s: a private address", url)
	}
	for name, a := range map[string]*Account{
		"plain":   NewAccount(AccountOptions{HTTPURL: p.HTTPURL}),
		"guarded": NewAccount(AccountOptions{HTTPURL: p.HTTPURL, Fetch: guarded}),
	} {
		_, err := a.Download(context.Background(), attachment(msg.SegImage, stale, "unknown.jpg"), 1<<20)
		if err == nil {
			t.Fatalf("%s: downloaded an expired, unknown image", name)
		}
		text := err.Error()
		if strings.Contains(text, "rkey") || !strings.Contains(text, "message 42") || !strings.Contains(text, "image") || !strings.Contains(text, "get_image") {
			t.Errorf("%s: %s", name, text)
		}
	}
	_, err := NewAccount(AccountOptions{HTTPURL: p.HTTPURL}).Download(context.Background(), msg.Attachment{Message: "1", Segment: msg.Segment{Kind: msg.SegImage}}, 10)
	if !errors.Is(err, errNothingToFetch) {
		t.Errorf("no URL, no id: %v", err)
	}
}

// TestDownloadVoicePrefersTheConvertedRecord: a voice note's URL serves
// QQ's SILK, which speech models cannot read, so the implementation's mp3
// comes first; the URL is the fallback.
func TestDownloadVoicePrefersTheConvertedRecord(t *testing.T) {
	p := filePeer(t)
	var fetched []string
	a := NewAccount(AccountOptions{HTTPURL: p.HTTPURL, Fetch: func(_ context.Context, url string, _ int64) (channel.Blob, error) {
		fetched = append(fetched, url)
		return channel.Blob{Data: []byte("#!SILK_V3"), MIME: "audio/silk"}, nil
	}})
	mp3 := []byte("\xff\xfb\x90\x64 frames")
	p.SetFileAnswer("v2.amr", onebottest.File{Data: mp3, NoURL: true})
	b, err := a.Download(context.Background(), attachment(msg.SegVoice, "https://voice.test/v2.silk", "v2.amr"), 1<<20)
	if err != nil || !bytes.Equal(b.Data, mp3) || len(fetched) != 0 {
		t.Fatalf("blob %q err %v fetched %v", b.Data, err, fetched)
	}
	p.Refuse("get_record", 100, "no such record")
	b, err = a.Download(context.Background(), attachment(msg.SegVoice, "https://voice.test/v2.silk", "v2.amr"), 1<<20)
	if err != nil || string(b.Data) != "#!SILK_V3" || len(fetched) != 1 {
		t.Fatalf("fallback: blob %q err %v fetched %v", b.Data, err, fetched)
	}
}
