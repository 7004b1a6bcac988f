package config

import "testing"

func TestUILocale(t *testing.T) {
	cfg, err := Parse([]byte(`{}`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UI.Locale != "zh-CN" {
		t.Errorf("default ui.locale = %q, want zh-CN", cfg.UI.Locale)
	}
	cfg, err = Parse([]byte(`{ ui: { locale: 'en' } }`), noEnv)
	if err != nil || cfg.UI.TextLocale() != "en" {
		t.Errorf("ui.locale en: %q, %v", cfg.UI.Locale, err)
	}
	for _, bad := range []string{"zh", "en-US", ""} {
		_, err := Parse([]byte(`{ ui: { locale: '`+bad+`' } }`), noEnv)
		want := `ui.locale: want zh-CN or en, got "` + bad + `"`
		if err == nil || err.Error() != want {
			t.Errorf("ui.locale %q: %v, want %s", bad, err, want)
		}
	}
}
