package feishusim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Upload limits of the platform.
const (
	// MaxImageUpload is the largest image POST /open-apis/im/v1/images
	// takes.
	MaxImageUpload = 10 << 20
	// MaxFileUpload is the largest file POST /open-apis/im/v1/files
	// takes.
	MaxFileUpload = 30 << 20
)

// Upload kinds.
const (
	UploadImage = "image"
	UploadFile  = "file"
)

// Upload is one image or file the bot uploaded.
type Upload struct {
	// Key is the image_key or file_key the upload answered with.
	Key string
	// Kind is UploadImage or UploadFile.
	Kind string
	// ImageType is an image's image_type (message or avatar).
	ImageType string
	// FileType is a file's file_type (opus, mp4, pdf, doc, xls, ppt or
	// stream), FileName its file_name, and Duration the duration field in
	// milliseconds (0 when not sent).
	FileType string
	FileName string
	Duration int
	// PartName is the file name of the multipart part that carried the
	// content.
	PartName string
	// Size is the length of Data, the content uploaded.
	Size int
	Data []byte
	Time time.Time
}

// fileTypes are the file_type values the file upload takes.
var fileTypes = map[string]bool{"opus": true, "mp4": true, "pdf": true, "doc": true, "xls": true, "ppt": true, "stream": true}

// formPart is one part of a multipart upload: a field's value, or a
// file's name and content.
type formPart struct {
	value    string
	filename string
	data     []byte
	file     bool
}

// readForm parses a multipart/form-data body into its parts by field
// name (the first part of each name).
func readForm(q *request) (map[string]formPart, *answer) {
	mt, params, err := mime.ParseMediaType(q.r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, fail(http.StatusBadRequest, CodeUploadInvalid, "invalid request param: want multipart/form-data")
	}
	mr := multipart.NewReader(bytes.NewReader(q.body), params["boundary"])
	out := map[string]formPart{}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fail(http.StatusBadRequest, CodeUploadInvalid, "invalid request param: "+err.Error())
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, fail(http.StatusBadRequest, CodeUploadInvalid, "invalid request param: "+err.Error())
		}
		name := p.FormName()
		if _, seen := out[name]; seen || name == "" {
			continue
		}
		fp := formPart{value: string(data)}
		if p.FileName() != "" {
			fp = formPart{filename: p.FileName(), data: data, file: true}
		}
		out[name] = fp
	}
}

// uploadImage serves POST /open-apis/im/v1/images.
func (s *Sim) uploadImage(q *request) *answer {
	form, a := readForm(q)
	if a != nil {
		return a
	}
	imageType := form["image_type"].value
	if imageType != "message" && imageType != "avatar" {
		return fail(http.StatusBadRequest, CodeUploadInvalid, fmt.Sprintf("invalid request param: image_type %q", imageType))
	}
	img, found := form["image"]
	switch {
	case !found || !img.file:
		return fail(http.StatusBadRequest, CodeUploadInvalid, "invalid request param: image is required")
	case len(img.data) == 0:
		return failCode(CodeUploadEmpty)
	case len(img.data) > MaxImageUpload:
		return failCode(CodeUploadTooLarge)
	}
	s.uploadSeq++
	u := Upload{
		Key: fmt.Sprintf("img_v3_sim%016x", s.uploadSeq), Kind: UploadImage, ImageType: imageType,
		PartName: img.filename, Size: len(img.data), Data: img.data, Time: q.now,
	}
	s.uploads = append(s.uploads, u)
	return ok(struct {
		ImageKey string `json:"image_key"`
	}{u.Key})
}

// uploadFile serves POST /open-apis/im/v1/files.
func (s *Sim) uploadFile(q *request) *answer {
	form, a := readForm(q)
	if a != nil {
		return a
	}
	fileType, fileName := form["file_type"].value, form["file_name"].value
	switch {
	case !fileTypes[fileType]:
		return fail(http.StatusBadRequest, CodeUploadInvalid, fmt.Sprintf("invalid request param: file_type %q", fileType))
	case fileName == "":
		return fail(http.StatusBadRequest, CodeUploadInvalid, "invalid request param: file_name is required")
	}
	duration := 0
	if d, sent := form["duration"]; sent {
		n, err := strconv.Atoi(d.value)
		if err != nil || n < 0 {
			return fail(http.StatusBadRequest, CodeUploadInvalid, fmt.Sprintf("invalid request param: duration %q", d.value))
		}
		duration = n
	}
	f, found := form["file"]
	switch {
	case !found || !f.file:
		return fail(http.StatusBadRequest, CodeUploadInvalid, "invalid request param: file is required")
	case len(f.data) == 0:
		return failCode(CodeUploadEmpty)
	case len(f.data) > MaxFileUpload:
		return failCode(CodeUploadTooLarge)
	}
	s.uploadSeq++
	u := Upload{
		Key: fmt.Sprintf("file_v3_sim%016x", s.uploadSeq), Kind: UploadFile, FileType: fileType, FileName: fileName,
		Duration: duration, PartName: f.filename, Size: len(f.data), Data: f.data, Time: q.now,
	}
	s.uploads = append(s.uploads, u)
	return ok(struct {
		FileKey string `json:"file_key"`
	}{u.Key})
}

// Uploads returns the images and files the bot uploaded, oldest first.
func (s *Sim) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Upload, len(s.uploads))
	for i, u := range s.uploads {
		u.Data = slices.Clone(u.Data)
		out[i] = u
	}
	return out
}

// Upload returns the upload with the image_key or file_key key.
func (s *Sim) Upload(key string) (Upload, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, found := s.uploadLocked(key)
	if found {
		u.Data = slices.Clone(u.Data)
	}
	return u, found
}

func (s *Sim) uploadLocked(key string) (Upload, bool) {
	for _, u := range s.uploads {
		if u.Key == key {
			return u, true
		}
	}
	return Upload{}, false
}

// checkMediaKey checks the key a sent image, file, audio or media message
// names: one the bot uploaded, of the kind the msg_type shows (an Opus
// file for audio, an MP4 for media). It returns the upload.
func (s *Sim) checkMediaKey(req *sendRequest) (Upload, *answer) {
	var c struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
	}
	_ = json.Unmarshal([]byte(req.Content), &c)
	key, kind := c.FileKey, UploadFile
	if req.MsgType == "image" {
		key, kind = c.ImageKey, UploadImage
	}
	u, found := s.uploadLocked(key)
	switch {
	case key == "":
		return Upload{}, fail(http.StatusBadRequest, CodeInvalidParam, "invalid message content: no "+kind+"_key")
	case !found || u.Kind != kind:
		return Upload{}, fail(http.StatusBadRequest, CodeInvalidParam, "invalid message content: unknown "+kind+"_key "+key)
	case req.MsgType == "audio" && u.FileType != "opus":
		return Upload{}, fail(http.StatusBadRequest, CodeInvalidParam, "invalid message content: audio wants an opus file, got "+u.FileType)
	case req.MsgType == "media" && u.FileType != "mp4":
		return Upload{}, fail(http.StatusBadRequest, CodeInvalidParam, "invalid message content: media wants an mp4 file, got "+u.FileType)
	}
	return u, nil
}
