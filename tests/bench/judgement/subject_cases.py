"""Labelled fact/state pairs for "supersede only when the subject is the same": an older
statement, then a newer one, each with its kind; `same` says whether a careful person would
have the newer one replace the older one (the same subject and attribute, a new value, a
negation or the end of a condition). Written before the product was run on them.

Each pair is run twice by eval_judgement.py: through `create --type KIND --title STATEMENT`
(both cards with the same domain and tags, as one person would file them) and through
`ingest` (the statement as text), each pair in a fresh vault.
"""

from __future__ import annotations


def _pair(key, split, lang, old, new, same, tags="notes", domain="general"):
    (old_kind, old_text), (new_kind, new_text) = old, new
    return dict(key=key, split=split, lang=lang, old_kind=old_kind, old=old_text, new_kind=new_kind, new=new_text,
                same=same, tags=tags, domain=domain)


PAIRS = [
    # ---------------------------------------------------------------- same subject: English
    _pair("s01", "dev", "en", ("fact", "The staging database runs PostgreSQL 14"),
          ("fact", "The staging database runs PostgreSQL 16"), True, "database,postgresql", "infra"),
    _pair("s02", "held", "en", ("fact", "Payments API client timeout is 30 seconds"),
          ("fact", "Payments API client timeout is 60 seconds"), True, "payments,timeout", "dev"),
    _pair("s03", "dev", "en", ("fact", "I live in Tokyo"), ("state", "I now live in Kyoto"), True),
    _pair("s04", "held", "en", ("state", "My back hurts after the move"), ("state", "My back no longer hurts"), True,
          "health"),
    _pair("s05", "dev", "en", ("fact", "My laptop has 32GB of RAM"), ("state", "My laptop now has 64GB of RAM"), True,
          "hardware"),
    _pair("s06", "held", "en", ("fact", "I work at Acme Corp"), ("fact", "I work at Globex"), True, "work"),
    _pair("s07", "dev", "en", ("state", "The CI pipeline is failing"), ("state", "The CI pipeline is green again"),
          True, "ci", "dev"),
    _pair("s08", "held", "en", ("fact", "Our on-call rotation lead is Maria"), ("fact", "Our on-call rotation lead is Kenji"),
          True, "team,on-call", "ops"),
    _pair("s09", "dev", "en", ("state", "The orders service is at version 2.3.1"),
          ("state", "The orders service is at version 2.4.0"), True, "orders,release", "ops"),
    _pair("s10", "held", "en", ("fact", "My name is Taro Yamada"), ("fact", "My name is Taro Suzuki"), True, "profile"),
    _pair("s11", "dev", "en", ("state", "I am training for a marathon"),
          ("state", "I am not training for a marathon anymore"), True, "health"),
    _pair("s12", "held", "en", ("fact", "The default branch is master"), ("fact", "The default branch is main"), True,
          "git", "dev"),
    # ---------------------------------------------------------------- same subject: Japanese
    _pair("s13", "dev", "ja", ("state", "腰が痛い"), ("state", "腰が治った"), True, "health"),
    _pair("s14", "held", "ja", ("fact", "東京に住んでいる"), ("state", "京都に引っ越した"), True),
    _pair("s15", "dev", "ja", ("state", "ステージングDBはバージョン14です"), ("state", "ステージングDBは現在バージョン15になっている"),
          True, "database", "infra"),
    _pair("s16", "held", "ja", ("fact", "私の名前は山田太郎です"), ("fact", "私の名前は鈴木太郎です"), True, "profile"),
    _pair("s17", "dev", "ja", ("fact", "ノートPCのメモリは16GBです"), ("fact", "ノートPCのメモリは32GBです"), True, "hardware"),
    _pair("s18", "held", "ja", ("state", "本番のAPIサーバーは停止中"), ("state", "本番のAPIサーバーは稼働中"), True,
          "api", "ops"),
    _pair("s19", "dev", "ja", ("fact", "勤務先はアクメ株式会社です"), ("fact", "勤務先はグロービックス株式会社です"), True, "work"),
    _pair("s20", "held", "ja", ("fact", "決済APIのクライアントタイムアウトは30秒"), ("fact", "決済APIのクライアントタイムアウトは60秒"),
          True, "payments,timeout", "dev"),
    _pair("s21", "dev", "ja", ("state", "CIのパイプラインが失敗している"), ("state", "CIのパイプラインが直った"), True, "ci", "dev"),
    _pair("s22", "held", "ja", ("fact", "デフォルトブランチは master です"), ("fact", "デフォルトブランチは main です"), True,
          "git", "dev"),
    _pair("s23", "dev", "ja", ("state", "風邪をひいている"), ("state", "風邪が治った"), True, "health"),
    _pair("s24", "held", "ja", ("state", "本番は Node.js 18 で動いている"), ("state", "本番は Node.js 20 で動いている"), True,
          "nodejs", "ops"),
    # ---------------------------------------------------------------- different subjects: English
    _pair("d01", "dev", "en", ("fact", "The staging database runs PostgreSQL 14"),
          ("fact", "The production database runs PostgreSQL 16"), False, "database,postgresql", "infra"),
    _pair("d02", "held", "en", ("fact", "Payments API client timeout is 30 seconds"),
          ("fact", "Payments API server timeout is 60 seconds"), False, "payments,timeout", "dev"),
    _pair("d03", "dev", "en", ("fact", "I am allergic to peanuts"), ("state", "I am also hungry"), False, "health"),
    _pair("d04", "held", "en", ("fact", "I live in Tokyo"), ("fact", "My sister lives in Osaka"), False, "family"),
    _pair("d05", "dev", "en", ("fact", "My laptop has 32GB of RAM"), ("fact", "My desktop has 64GB of RAM"), False,
          "hardware"),
    _pair("d06", "held", "en", ("state", "My back hurts"), ("state", "My knee hurts"), False, "health"),
    _pair("d07", "dev", "en", ("fact", "I work at Acme Corp"), ("fact", "I work on the billing team"), False, "work"),
    _pair("d08", "held", "en", ("state", "The CI pipeline is failing"), ("state", "The staging deploy is failing"), False,
          "ci,deploy", "dev"),
    _pair("d09", "dev", "en", ("fact", "The orders service uses PostgreSQL"),
          ("fact", "The orders service uses Redis for caching"), False, "orders", "dev"),
    _pair("d10", "held", "en", ("state", "I am tired"), ("state", "I am busy with the release"), False, "health,work"),
    _pair("d11", "dev", "en", ("fact", "Our on-call rotation lead is Maria"), ("fact", "Our release manager is Kenji"),
          False, "team", "ops"),
    _pair("d12", "held", "en", ("fact", "The API rate limit is 100 requests per minute"),
          ("fact", "The API page size limit is 100 items"), False, "api,limits", "dev"),
    # ---------------------------------------------------------------- different subjects: Japanese
    _pair("d13", "dev", "ja", ("state", "腰が痛い"), ("state", "膝が痛い"), False, "health"),
    _pair("d14", "held", "ja", ("fact", "東京に住んでいる"), ("fact", "姉は大阪に住んでいる"), False, "family"),
    _pair("d15", "dev", "ja", ("state", "ステージングDBはバージョン14です"), ("state", "本番DBはバージョン16です"), False,
          "database", "infra"),
    _pair("d16", "held", "ja", ("fact", "ピーナッツアレルギーがある"), ("state", "お腹が空いている"), False, "health"),
    _pair("d17", "dev", "ja", ("fact", "ノートPCのメモリは16GBです"), ("fact", "ノートPCのストレージは512GBです"), False,
          "hardware"),
    _pair("d18", "held", "ja", ("state", "本番のAPIサーバーは停止中"), ("state", "ステージングのAPIサーバーは停止中"), False,
          "api", "ops"),
    _pair("d19", "dev", "ja", ("fact", "決済APIのクライアントタイムアウトは30秒"), ("fact", "決済APIのサーバータイムアウトは60秒"),
          False, "payments,timeout", "dev"),
    _pair("d20", "held", "ja", ("state", "CIのパイプラインが失敗している"), ("state", "ステージングへのデプロイが失敗している"), False,
          "ci,deploy", "dev"),
    _pair("d21", "dev", "ja", ("fact", "デフォルトブランチは master です"), ("fact", "リリースブランチは release です"), False,
          "git", "dev"),
    _pair("d22", "held", "ja", ("state", "風邪をひいている"), ("state", "仕事が忙しい"), False, "health,work"),
    _pair("d23", "dev", "ja", ("fact", "会社の最寄り駅は渋谷です"), ("fact", "自宅の最寄り駅は三鷹です"), False, "commute"),
    _pair("d24", "held", "ja", ("state", "今はダイエット中"), ("state", "今は転職活動中"), False, "health,work"),
    # ---------------------------------------------------------------- blind: written after the rules were
    # frozen (commit a362736), expected answers first, run once for the report.
    _pair("bs1", "blind", "en", ("fact", "The build server has 16 CPU cores"),
          ("fact", "The build server now has 32 CPU cores"), True, "ci,hardware", "ops"),
    _pair("bs2", "blind", "en", ("state", "The VPN is down"), ("state", "The VPN works again"), True, "vpn", "ops"),
    _pair("bs3", "blind", "en", ("fact", "My favorite language is Python"), ("fact", "My favorite language is Rust now"),
          True, "profile"),
    _pair("bs4", "blind", "en", ("state", "I am on vacation"), ("state", "I am back from vacation"), True, "work"),
    _pair("bs5", "blind", "ja", ("state", "熱がある"), ("state", "熱が下がった"), True, "health"),
    _pair("bs6", "blind", "ja", ("fact", "自宅の最寄り駅は三鷹です"), ("fact", "自宅の最寄り駅は吉祥寺です"), True, "commute"),
    _pair("bs7", "blind", "ja", ("state", "本番のDBは停止中"), ("state", "本番のDBが復旧した"), True, "database", "ops"),
    _pair("bs8", "blind", "en", ("fact", "The on-call phone number is 555-0100"),
          ("fact", "The on-call phone number is 555-0199"), True, "on-call", "ops"),
    _pair("bd1", "blind", "en", ("fact", "The build server has 16 CPU cores"),
          ("fact", "The build server has 64GB of RAM"), False, "ci,hardware", "ops"),
    _pair("bd2", "blind", "en", ("state", "The VPN is down"), ("state", "The wiki is down"), False, "vpn,wiki", "ops"),
    _pair("bd3", "blind", "en", ("fact", "My favorite language is Python"), ("fact", "My favorite editor is Vim"), False,
          "profile"),
    _pair("bd4", "blind", "en", ("state", "I am on vacation"), ("state", "I am reading Dune"), False, "life"),
    _pair("bd5", "blind", "ja", ("state", "熱がある"), ("state", "頭が痛い"), False, "health"),
    _pair("bd6", "blind", "ja", ("fact", "自宅の最寄り駅は三鷹です"), ("fact", "実家の最寄り駅は長野です"), False, "commute"),
    _pair("bd7", "blind", "ja", ("state", "本番のDBは停止中"), ("state", "本番のキャッシュは停止中"), False, "database", "ops"),
    _pair("bd8", "blind", "en", ("fact", "The on-call phone number is 555-0100"),
          ("fact", "The support phone number is 555-0100"), False, "phone", "ops"),
]
