"""PostgreSQL 15's keywords, as pg_get_keywords() lists them.

By category (catcode): U unreserved, C unreserved but not a function or type name, T
reserved but a function or type name, R reserved; and whether the word may be a column
label without AS (barelabel). The emulated catalog's pg_get_keywords() answers these, and
quote_ident() and format('%I') quote a name that is a keyword of any category but U even
when it is written in lower-case letters, digits and underscores alone (ruleutils.c,
quote_identifier).
"""

from __future__ import annotations

CATEGORY_NAMES = {"U": "unreserved", "C": "unreserved (cannot be function or type name)",
                  "T": "reserved (can be function or type name)", "R": "reserved"}

_BY_CATEGORY = {
    "U": """
    abort absolute access action add admin after aggregate also alter always asensitive
    assertion assignment at atomic attach attribute backward before begin breadth by cache
    call called cascade cascaded catalog chain characteristics checkpoint class close
    cluster columns comment comments commit committed compression configuration conflict
    connection constraints content continue conversion copy cost csv cube current cursor
    cycle data database day deallocate declare defaults deferred definer delete delimiter
    delimiters depends depth detach dictionary disable discard document domain double drop
    each enable encoding encrypted enum escape event exclude excluding exclusive execute
    explain expression extension external family filter finalize first following force
    forward function functions generated global granted groups handler header hold hour
    identity if immediate immutable implicit import include including increment index
    indexes inherit inherits inline input insensitive insert instead invoker isolation key
    label language large last leakproof level listen load local location lock locked logged
    mapping match matched materialized maxvalue merge method minute minvalue mode month move
    name names new next nfc nfd nfkc nfkd no normalized nothing notify nowait nulls object
    of off oids old operator option options ordinality others over overriding owned owner
    parallel parameter parser partial partition passing password plans policy preceding
    prepare prepared preserve prior privileges procedural procedure procedures program
    publication quote range read reassign recheck recursive ref referencing refresh reindex
    relative release rename repeatable replace replica reset restart restrict return returns
    revoke role rollback rollup routine routines rows rule savepoint schema schemas scroll
    search second security sequence sequences serializable server session set sets share
    show simple skip snapshot sql stable standalone start statement statistics stdin stdout
    storage stored strict strip subscription support sysid system tables tablespace temp
    template temporary text ties transaction transform trigger truncate trusted type types
    uescape unbounded uncommitted unencrypted unknown unlisten unlogged until update vacuum
    valid validate validator value varying version view views volatile whitespace within
    without work wrapper write xml year yes zone
""",
    "R": """
    all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create current_catalog current_date current_role current_time
    current_timestamp current_user default deferrable desc distinct do else end except false
    fetch for foreign from grant group having in initially intersect into lateral leading
    limit localtime localtimestamp not null offset on only or order placing primary
    references returning select session_user some symmetric table then to trailing true
    union unique user using variadic when where window with
""",
    "C": """
    between bigint bit boolean char character coalesce dec decimal exists extract float
    greatest grouping inout int integer interval least national nchar none normalize nullif
    numeric out overlay position precision real row setof smallint substring time timestamp
    treat trim values varchar xmlattributes xmlconcat xmlelement xmlexists xmlforest
    xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable
""",
    "T": """
    authorization binary collation concurrently cross current_schema freeze full ilike inner
    is isnull join left like natural notnull outer overlaps right similar tablesample
    verbose
""",
}
KEYWORDS: dict[str, str] = {word: code for code, words in _BY_CATEGORY.items() for word in words.split()}
NOT_UNRESERVED: frozenset[str] = frozenset(w for w, code in KEYWORDS.items() if code != "U")
NOT_BARE_LABELS: frozenset[str] = frozenset("""
    array as char character create day except fetch filter for from grant group having hour
    intersect into isnull limit minute month notnull offset on order over overlaps precision
    returning second to union varying where window with within without year
""".split())


def keyword_rows() -> list[tuple[str, str, bool, str, str]]:
    """pg_get_keywords()'s rows: word, catcode, barelabel, catdesc, baredesc."""
    return [(word, code, word not in NOT_BARE_LABELS, CATEGORY_NAMES[code],
             "requires AS" if word in NOT_BARE_LABELS else "can be bare label")
            for word, code in sorted(KEYWORDS.items())]
