package larkevent

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// The open platform's own sample (the decryption example of "Receive
// events" / 接收事件, also in its SDKs' tests): Encrypt Key "test key".
// Checked independently with openssl, which shows the PKCS#7 padding is
// five bytes of 0x05:
//
//	echo P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk= | base64 -d > buf
//	K=$(printf %s 'test key' | openssl dgst -sha256 -r | cut -d' ' -f1)
//	IV=$(head -c16 buf | xxd -p)
//	tail -c+17 buf | openssl enc -d -aes-256-cbc -K $K -iv $IV -nopad | xxd
const (
	publishedKey       = "test key"
	publishedEncrypted = "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="
	publishedPlain     = "hello world"
)

func TestDecryptPublishedVector(t *testing.T) {
	got, err := Decrypt(publishedKey, publishedEncrypted)
	if err != nil || string(got) != publishedPlain {
		t.Fatalf("Decrypt = %q, %v; want %q", got, err, publishedPlain)
	}
	if got, err := Decrypt("other key", publishedEncrypted); err == nil {
		t.Fatalf("a wrong key decrypted to %q", got)
	}
}

// A vector of our own, produced with openssl rather than with this
// package:
//
//	KEY='pincer encrypt key'
//	K=$(printf %s "$KEY" | openssl dgst -sha256 -r | cut -d' ' -f1)
//	IV=000102030405060708090a0b0c0d0e0f
//	(printf %s $IV | xxd -r -p; printf %s "$kaPlain" |
//	  openssl enc -aes-256-cbc -K $K -iv $IV) | base64 -w0
//
// and the signature with
//
//	printf %s "$kaTimestamp$kaNonce$KEY$kaBody" | openssl dgst -sha256
const (
	kaKey       = "pincer encrypt key"
	kaPlain     = `{"challenge":"ajls384kdjx98XX","token":"VerificationTokenValue","type":"url_verification"}`
	kaEncrypted = "AAECAwQFBgcICQoLDA0OD/ixh8gfD1BgKW70fLXHyqre0lZktm+C4F/wXMK2silLlBxeyvORtEq5YHSvCbnwPnXjIgVi/vOdFugABCLUL0HBNdwHDfcEyu0HJgOxCZPxuUIjNgNMsMjwq1I/nTUDKA=="
	kaTimestamp = "1760000000"
	kaNonce     = "n0nce-3f9a"
	kaBody      = `{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}`
	kaSignature = "e83a12ba5f14e706ee1a81deea1fd0cc1d314a991cf8b3bcef1d33187af08c6f"
)

// counting is an IV source of 00 01 02 … 0f.
func counting() *bytes.Reader {
	iv := make([]byte, aes.BlockSize)
	for i := range iv {
		iv[i] = byte(i)
	}
	return bytes.NewReader(iv)
}

func TestEncryptKnownAnswer(t *testing.T) {
	got, err := Encrypt(kaKey, []byte(kaPlain), counting())
	if err != nil {
		t.Fatal(err)
	}
	if got != kaEncrypted {
		t.Fatalf("Encrypt = %s\nwant       %s", got, kaEncrypted)
	}
	plain, err := Decrypt(kaKey, kaEncrypted)
	if err != nil || string(plain) != kaPlain {
		t.Fatalf("Decrypt = %q, %v", plain, err)
	}
}

func TestSignatureKnownAnswer(t *testing.T) {
	if got := Signature(kaTimestamp, kaNonce, kaKey, []byte(kaBody)); got != kaSignature {
		t.Fatalf("Signature = %s, want %s", got, kaSignature)
	}
	// Every part counts.
	for _, s := range []string{
		Signature("1760000001", kaNonce, kaKey, []byte(kaBody)),
		Signature(kaTimestamp, "n0nce-3f9b", kaKey, []byte(kaBody)),
		Signature(kaTimestamp, kaNonce, kaKey+" ", []byte(kaBody)),
		Signature(kaTimestamp, kaNonce, kaKey, []byte(kaBody+" ")),
	} {
		if s == kaSignature {
			t.Errorf("a changed input kept the signature")
		}
	}
}

func TestEncryptDecryptRoundTrip(t *testing.T) {
	for n := range 50 {
		plain := bytes.Repeat([]byte{'x'}, n)
		enc, err := Encrypt("k", plain, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.StdEncoding.DecodeString(enc)
		// IV, then the plaintext padded to the next whole block (a whole
		// block of padding when it already ends on one).
		if want := aes.BlockSize + (n/aes.BlockSize+1)*aes.BlockSize; len(raw) != want {
			t.Errorf("%d bytes encrypt to %d, want %d", n, len(raw), want)
		}
		got, err := Decrypt("k", enc)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("round trip of %d bytes = %q, %v", n, got, err)
		}
	}
}

func TestEncryptRandomIV(t *testing.T) {
	a, _ := Encrypt("k", []byte("same"), nil)
	b, _ := Encrypt("k", []byte("same"), nil)
	if a == b {
		t.Fatal("two encryptions share an IV")
	}
	if _, err := Encrypt("k", []byte("x"), strings.NewReader("short")); err == nil {
		t.Fatal("an IV source that ran dry gave no error")
	}
}

// rawEncrypt encrypts blocks as they are, with no padding added, under
// the key that Decrypt derives from key.
func rawEncrypt(t *testing.T, key string, blocks []byte) string {
	t.Helper()
	k := sha256.Sum256([]byte(key))
	c, err := aes.NewCipher(k[:])
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, aes.BlockSize+len(blocks))
	copy(buf[aes.BlockSize:], blocks)
	cipher.NewCBCEncrypter(c, buf[:aes.BlockSize]).CryptBlocks(buf[aes.BlockSize:], buf[aes.BlockSize:])
	return base64.StdEncoding.EncodeToString(buf)
}

func TestDecryptPadding(t *testing.T) {
	block := func(tail ...byte) []byte {
		b := bytes.Repeat([]byte{'a'}, aes.BlockSize)
		copy(b[aes.BlockSize-len(tail):], tail)
		return b
	}
	good := []struct {
		name   string
		blocks []byte
		want   string
	}{
		{"one byte", block(1), strings.Repeat("a", 15)},
		{"three bytes", block(3, 3, 3), strings.Repeat("a", 13)},
		{"a whole block", append(block(), bytes.Repeat([]byte{16}, 16)...), strings.Repeat("a", 16)},
	}
	for _, c := range good {
		got, err := Decrypt("k", rawEncrypt(t, "k", c.blocks))
		if err != nil || string(got) != c.want {
			t.Errorf("%s: Decrypt = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	bad := []struct {
		name   string
		blocks []byte
	}{
		{"pad byte 0", block(0)},
		{"pad byte 17", block(17)},
		{"pad byte 255", block(255)},
		{"unequal pad bytes", block(2, 3, 3)},
		{"one wrong among sixteen", append(block(), append([]byte{15}, bytes.Repeat([]byte{16}, 15)...)...)},
		// The SDK's trim-to-braces decryption would accept this one.
		{"JSON with no padding", []byte(`{"type":"aaaaa"}`)},
	}
	for _, c := range bad {
		got, err := Decrypt("k", rawEncrypt(t, "k", c.blocks))
		if !errors.Is(err, errPadding) {
			t.Errorf("%s: Decrypt = %q, %v; want a padding error", c.name, got, err)
		}
	}
}

func TestDecryptMalformed(t *testing.T) {
	iv := base64.StdEncoding.EncodeToString(make([]byte, aes.BlockSize))
	for name, enc := range map[string]string{
		"empty":             "",
		"not base64":        "***",
		"URL alphabet":      strings.ReplaceAll(strings.ReplaceAll(kaEncrypted, "+", "-"), "/", "_"),
		"IV only":           iv,
		"short":             base64.StdEncoding.EncodeToString(make([]byte, 20)),
		"ragged last block": base64.StdEncoding.EncodeToString(make([]byte, 40)),
	} {
		if got, err := Decrypt(kaKey, enc); err == nil {
			t.Errorf("%s: Decrypt = %q, want an error", name, got)
		}
	}
}

func FuzzDecrypt(f *testing.F) {
	f.Add(publishedKey, []byte(publishedPlain), publishedEncrypted)
	f.Add(kaKey, []byte(kaPlain), kaEncrypted)
	f.Add("", []byte{}, "")
	f.Add("k", bytes.Repeat([]byte{16}, 16), "AAAA")
	f.Fuzz(func(t *testing.T, key string, plain []byte, encrypted string) {
		// Anything decrypts to an error or to at most the ciphertext's
		// length, without panicking.
		if got, err := Decrypt(key, encrypted); err == nil && len(got) >= len(encrypted) {
			t.Fatalf("%d bytes of base64 decrypted to %d bytes", len(encrypted), len(got))
		}
		// What Encrypt gives, Decrypt takes back.
		enc, err := Encrypt(key, plain, counting())
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decrypt(key, enc)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip of %q = %q, %v", plain, got, err)
		}
	})
}
