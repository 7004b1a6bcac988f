package larkevent

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// errPadding reports a decrypted body whose PKCS#7 padding is not valid,
// which is what a wrong Encrypt Key or a corrupted body gives.
var errPadding = errors.New("invalid PKCS#7 padding")

// Decrypt decrypts the "encrypt" field of an event pushed with an Encrypt
// Key: the field is base64 (standard alphabet, padded) of a 16-byte IV
// followed by AES-256-CBC ciphertext under the SHA-256 of encryptKey, and
// the plaintext is PKCS#7 padded. The padding is checked strictly (a pad
// byte of 1 to 16, every pad byte equal to it), so a wrong key or a
// corrupted body is an error rather than garbage.
func Decrypt(encryptKey, encrypted string) ([]byte, error) {
	buf, err := base64.StdEncoding.DecodeString(encrypted)
	if err != nil {
		return nil, fmt.Errorf("larkevent: decrypt: base64: %w", err)
	}
	if len(buf) < 2*aes.BlockSize {
		return nil, fmt.Errorf("larkevent: decrypt: %d bytes, want an IV and at least one block", len(buf))
	}
	if len(buf)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("larkevent: decrypt: %d bytes of ciphertext, not a multiple of the block size", len(buf)-aes.BlockSize)
	}
	block, err := newCipher(encryptKey)
	if err != nil {
		return nil, fmt.Errorf("larkevent: decrypt: %w", err)
	}
	iv, data := buf[:aes.BlockSize], buf[aes.BlockSize:]
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(data, data)
	n, ok := unpad(data)
	if !ok {
		return nil, fmt.Errorf("larkevent: decrypt: %w", errPadding)
	}
	return data[:n], nil
}

// unpad returns the length of data without its PKCS#7 padding, and
// whether the padding is valid. data is a non-empty whole number of
// blocks. It looks at the last block the same way whatever its content,
// so its timing does not tell a valid padding from an invalid one.
func unpad(data []byte) (int, bool) {
	last := data[len(data)-aes.BlockSize:]
	p := int(last[aes.BlockSize-1])
	good := subtle.ConstantTimeLessOrEq(1, p) & subtle.ConstantTimeLessOrEq(p, aes.BlockSize)
	for i := range aes.BlockSize {
		// The i-th byte from the end is padding when i < p.
		inPad := subtle.ConstantTimeLessOrEq(i+1, p)
		same := subtle.ConstantTimeByteEq(last[aes.BlockSize-1-i], byte(p))
		good &= subtle.ConstantTimeSelect(inPad, same, 1)
	}
	if good != 1 {
		return 0, false
	}
	return len(data) - p, true
}

// Encrypt is the inverse of Decrypt, as the open platform encrypts an
// event: a random IV read from rnd (crypto/rand when nil), PKCS#7
// padding, AES-256-CBC under the SHA-256 of encryptKey, base64 of the IV
// followed by the ciphertext. pincer receives events and never sends
// them; Encrypt is for tests and simulators of the platform.
func Encrypt(encryptKey string, plain []byte, rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	block, err := newCipher(encryptKey)
	if err != nil {
		return "", fmt.Errorf("larkevent: encrypt: %w", err)
	}
	p := aes.BlockSize - len(plain)%aes.BlockSize
	buf := make([]byte, aes.BlockSize+len(plain)+p)
	if _, err := io.ReadFull(rnd, buf[:aes.BlockSize]); err != nil {
		return "", fmt.Errorf("larkevent: encrypt: reading the IV: %w", err)
	}
	data := buf[aes.BlockSize:]
	copy(data, plain)
	for i := len(plain); i < len(data); i++ {
		data[i] = byte(p)
	}
	cipher.NewCBCEncrypter(block, buf[:aes.BlockSize]).CryptBlocks(data, data)
	return base64.StdEncoding.EncodeToString(buf), nil
}

func newCipher(encryptKey string) (cipher.Block, error) {
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("AES cipher: %w", err)
	}
	return block, nil
}

// Signature is the X-Lark-Signature the open platform sends with an
// event when an Encrypt Key is set: the lower-case hex SHA-256 of the
// X-Lark-Request-Timestamp and X-Lark-Request-Nonce headers, the Encrypt
// Key and the raw request body, concatenated.
func Signature(timestamp, nonce, encryptKey string, body []byte) string {
	sum := signature(timestamp, nonce, encryptKey, body)
	return hex.EncodeToString(sum[:])
}

func signature(timestamp, nonce, encryptKey string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	io.WriteString(h, timestamp)
	io.WriteString(h, nonce)
	io.WriteString(h, encryptKey)
	h.Write(body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
