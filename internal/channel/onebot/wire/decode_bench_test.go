package wire

import "testing"

// BenchmarkDecodeGroupMessage decodes and normalizes a group message as
// NapCat sends one (a reply with QQ's @ of the quoted author, an @ of
// someone, Chinese text with a face), the path of every event pincer
// takes in; it reports the allocations, which the garbage collector pays
// for again in a burst.
func BenchmarkDecodeGroupMessage(b *testing.B) {
	frame := []byte(`{"self_id":10001,"user_id":20002,"time":1780000000,"message_id":123456789,"message_seq":123456789,"real_id":123456789,"real_seq":"5566","message_type":"group","sender":{"user_id":20002,"nickname":"群友甲","card":"甲","role":"member"},"raw_message":"[CQ:reply,id=123456700][CQ:at,qq=30003] 今晚几点集合？我八点以后有空，你们呢[CQ:face,id=14]","font":14,"sub_type":"normal","message":[{"type":"reply","data":{"id":"123456700"}},{"type":"at","data":{"qq":"30003","name":"乙"}},{"type":"text","data":{"text":" 今晚几点集合？我八点以后有空，你们呢"}},{"type":"face","data":{"id":"14","raw":{"faceIndex":14,"faceText":"/微笑"},"resultId":null,"chainCount":null}}],"message_format":"array","post_type":"message","group_id":700000123}`)
	b.ReportAllocs()
	for b.Loop() {
		ev, _ := Decode(frame)
		if ev == nil {
			b.Fatal("not decoded")
		}
		m, err := ev.Normalize("default", 10001, 4000)
		if err != nil || m.Text == "" {
			b.Fatal(err)
		}
	}
}
