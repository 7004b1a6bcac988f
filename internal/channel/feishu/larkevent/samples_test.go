package larkevent

// Events as the open platform pushes them (the receive_v1 event is the
// example of the Feishu reference, §2.3).
const (
	sampleToken = "VerificationTokenValue"

	sampleReceive = `{
  "schema": "2.0",
  "header": {
    "event_id": "7f3c0e5a9b1d4c2e8a6f0b3d5e7c9a1b", "event_type": "im.message.receive_v1",
    "create_time": "1760000000456", "token": "VerificationTokenValue",
    "app_id": "cli_a5f0c3e2d1b0a9f8", "tenant_key": "2ca1d211f64f6438"
  },
  "event": {
    "sender": {
      "sender_id": {"open_id": "ou_3b8f1c2d4e5a6b7c8d9e0f1a2b3c4d5e", "union_id": "on_9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"},
      "sender_type": "user", "tenant_key": "2ca1d211f64f6438"
    },
    "message": {
      "message_id": "om_dc13264520392913993dd051dba21dcf",
      "parent_id": "om_5ce6d572455d361153b7cb51da133945",
      "root_id": "om_5ce6d572455d361153b7cb51da133945",
      "create_time": "1760000000321", "update_time": "1760000000321",
      "chat_id": "oc_5ad11d72b830411d72b836c20", "chat_type": "group",
      "message_type": "text",
      "content": "{\"text\":\"@_user_1 帮我总结一下 @_user_2 的方案\"}",
      "mentions": [
        {"key": "@_user_1", "id": {"open_id": "ou_bot0000000000000000000000000001", "union_id": "on_b1"}, "name": "Helper", "tenant_key": "2ca1d211f64f6438"},
        {"key": "@_user_2", "id": {"open_id": "ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f", "union_id": "on_c2", "user_id": "u_c2"}, "name": "王五", "tenant_key": "2ca1d211f64f6438"}
      ],
      "user_agent": "Mozilla/5.0 Lark/7.30.0 LarkLocale/zh_CN"
    }
  }
}`

	sampleRecalled = `{"schema":"2.0","header":{"event_id":"e_recall_1","event_type":"im.message.recalled_v1",
  "create_time":"1760000005000","token":"VerificationTokenValue","app_id":"cli_a5f0c3e2d1b0a9f8","tenant_key":"2ca1d211f64f6438"},
  "event":{"message_id":"om_dc13264520392913993dd051dba21dcf","chat_id":"oc_5ad11d72b830411d72b836c20",
  "recall_time":"1760000004999","recall_type":"message_owner"}}`

	// A v1 event (the shape of the open platform's v1 example).
	sampleV1 = `{"ts":"1502199207.7171419","uuid":"bc447199585340d1f3728d26b1c0297a",
  "token":"VerificationTokenValue","type":"event_callback",
  "event":{"app_id":"cli_9e28cb7ba56a100e","tenant_key":"736588c9260f175e","type":"p2p_chat_create",
  "chat_id":"oc_9e28cb7ba56a100e","operator":{"open_id":"ou_2d2c0399b53d06fd195bb393cd3ac9d7"}}}`

	sampleChallenge = `{"challenge":"ajls384kdjx98XX","token":"VerificationTokenValue","type":"url_verification"}`
)
