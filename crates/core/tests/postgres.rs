//! PostgreSQL into SQLite against a real server (see `support/pg.rs`): every cell of
//! every mapped type equals the server's own text output mapped by the documented table
//! (read through the text protocol, not the binary COPY liteload uses); keys and indexes;
//! a query; and the failures a user meets (a wrong password, no server, a missing table,
//! a server that dies mid-copy), each a clear error that leaves no file.
#![cfg(feature = "postgres")]

mod support;

use liteload::postgres::{import_postgres, PgOptions};
use liteload::rusqlite::{types::Value as Sql, Connection};
use liteload::{ErrorKind, ImportOptions, Progress};
use serde_json::Value as Json;
use support::pg::PgServer;

/// The hostile all-types table.
const ALL_TYPES: &str = r#"
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy ☺');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE TABLE all_types (
  i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision, n numeric, n2 numeric(12,2),
  b boolean, t text, v varchar(20), c char(5), by bytea, u uuid, d date, ts timestamp,
  tz timestamptz, tm time, j json, jb jsonb, ia integer[], ta text[], na integer[][],
  m mood, ip inet, net cidr, iv interval, mo money, pt point, dom posint, "Mixed Case ""q""" text
);
INSERT INTO all_types VALUES
 (-32768, -2147483648, -9223372036854775808, 1.1, -0.0, 1234567890123456789012345678901234567890.0123456789, -0.50,
  true, E'emoji 🎉, quote \" '' and\nnewline\r\ttab', 'ünïcödé', 'ab', E'\\x00ff0000', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
  '0001-01-01', '0001-01-01 00:00:00', '9999-12-31 23:59:59.999999+00', '23:59:59.999999', '{"k": [1, "é"], "z": null}',
  '{"b": 2, "a": [true, null, "x\"y"]}', '{1,NULL,3}', '{"a b","c,d",NULL,"q\"r","NULL"}', '{{1,2},{3,NULL}}',
  'happy ☺', '192.168.0.1/24', '10.0.0.0/8', '1 year 2 mons 3 days 04:05:06.7', 1234.5, '(1.5,-2)', 7, 'x'),
 (32767, 2147483647, 9223372036854775807, 'NaN', 'Infinity', 'NaN', 0, false, '', '', '', '', NULL,
  '9999-12-31', '9999-12-31 23:59:59.999999', '2026-11-28 12:34:56.5-08:30', '00:00:00', '[]', '{}', '{}', '{}', '{}',
  'sad', '::1', '::/0', '-1 days', -0.01, '(0,0)', 1, ''),
 (0, 0, 0, '-Infinity', 1e300, 'Infinity', 99999999.99, NULL, NULL, NULL, NULL, NULL, NULL,
  'infinity', '-infinity', 'infinity', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (NULL, NULL, NULL, 3.4028235e38, 2.2250738585072014e-308, '-Infinity', NULL, NULL, repeat('長', 10000), NULL, NULL, decode(repeat('00', 5000), 'hex'), NULL,
  '2000-02-29', '1999-12-31 23:59:59', '1970-01-01 00:00:00+00', '12:00:00', 'null', '"s"', '{NULL}', '{""}', '{{{1}}}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (1, 1, 1, 0.1, 0.1, 0.000000000000000000000000000001, 0.01, true, 'ok', 'ok', 'ok', '\x41', '00000000-0000-0000-0000-000000000000',
  '0044-03-15 BC', '0044-03-15 12:00:00 BC', '0044-03-15 12:00:00+00 BC', '00:00:00.000001', '1', '1.0', '{-1}', '{"\\"}', '{{1},{2}}',
  'ok', '0.0.0.0', '0.0.0.0/32', '0', 0, '(1,1)', 2, NULL);
"#;

/// The value the mapping table promises for a value of type `ty` that the server
/// prints as `text` (session time zone UTC, DateStyle ISO, bytea hex).
fn expected(ty: &str, text: Option<&str>) -> Sql {
    let Some(s) = text else { return Sql::Null };
    // PostgreSQL drops a fraction's trailing zeros; the mapping writes six digits.
    let six = |s: &str| -> String {
        match s.find('.') {
            Some(p) => {
                let end = s[p + 1..]
                    .find(|c: char| !c.is_ascii_digit())
                    .map_or(s.len(), |e| p + 1 + e);
                format!("{}{:0<6}{}", &s[..=p], &s[p + 1..end], &s[end..])
            }
            None => s.to_string(),
        }
    };
    let timed = matches!(
        ty,
        "timestamp without time zone" | "time without time zone" | "timestamp with time zone"
    );
    let owned = if timed { six(s) } else { s.to_string() };
    let s = owned.as_str();
    let float = |s: &str| -> Sql {
        let f: f64 = s.parse().unwrap_or_else(|_| panic!("{ty} {s:?}"));
        if f.is_nan() {
            Sql::Null
        } else {
            Sql::Real(f)
        }
    };
    match ty {
        "smallint" | "integer" | "bigint" | "posint" => Sql::Integer(s.parse().unwrap()),
        "real" | "double precision" => float(s),
        "boolean" => Sql::Integer(i64::from(s == "t")),
        "bytea" => {
            let hex = s.strip_prefix("\\x").unwrap();
            Sql::Blob(
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect(),
            )
        }
        "timestamp without time zone" | "time without time zone" => {
            Sql::Text(s.replacen(' ', "T", 1))
        }
        "timestamp with time zone" if s.contains("infinity") => Sql::Text(s.into()),
        "timestamp with time zone" => {
            let t = s.replacen(' ', "T", 1);
            let (instant, bc) = match t.strip_suffix(" BC") {
                Some(i) => (i.to_string(), " BC"),
                None => (t.clone(), ""),
            };
            Sql::Text(format!("{}Z{bc}", instant.strip_suffix("+00").unwrap()))
        }
        t if t.ends_with("[]") => Sql::Text(pg_array(s, t.starts_with("integer")).to_string()),
        _ => Sql::Text(s.to_string()),
    }
}

/// A PostgreSQL array literal (`{1,NULL,{"a b"}}`) as JSON: numbers when `numbers`,
/// else strings; `NULL` unquoted is null.
fn pg_array(s: &str, numbers: bool) -> Json {
    fn parse(b: &[u8], at: &mut usize, numbers: bool) -> Json {
        assert_eq!(b[*at], b'{');
        *at += 1;
        let mut out = vec![];
        loop {
            match b[*at] {
                b'}' => {
                    *at += 1;
                    return Json::Array(out);
                }
                b',' => *at += 1,
                b'{' => out.push(parse(b, at, numbers)),
                b'"' => {
                    *at += 1;
                    let mut v = vec![];
                    while b[*at] != b'"' {
                        if b[*at] == b'\\' {
                            *at += 1;
                        }
                        v.push(b[*at]);
                        *at += 1;
                    }
                    *at += 1;
                    out.push(Json::String(String::from_utf8(v).unwrap()));
                }
                _ => {
                    let start = *at;
                    while b[*at] != b',' && b[*at] != b'}' {
                        *at += 1;
                    }
                    let raw = std::str::from_utf8(&b[start..*at]).unwrap();
                    out.push(match raw {
                        "NULL" => Json::Null,
                        r if numbers => serde_json::from_str(r).unwrap(),
                        r => Json::String(r.into()),
                    });
                }
            }
        }
    }
    // Several dimensions come as nested arrays; an empty array is `{}`.
    parse(s.as_bytes(), &mut 0, numbers)
}

fn read_sqlite(db: &std::path::Path, table: &str) -> (Vec<String>, Vec<String>, Vec<Vec<Sql>>) {
    let c = Connection::open(db).unwrap();
    support::assert_intact(&c);
    let mut st = c
        .prepare(&format!(
            "SELECT name, type FROM pragma_table_info('{table}') ORDER BY cid"
        ))
        .unwrap();
    let (names, types): (Vec<String>, Vec<String>) = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .unzip();
    let rows = support::table_rows(&c, &format!("\"{table}\""), false);
    (names, types, rows)
}

fn same(a: &Sql, b: &Sql) -> bool {
    match (a, b) {
        (Sql::Text(x), Sql::Text(y)) if x.starts_with(['[', '{']) => {
            // JSON compared as values (jsonb and arrays print their own spacing).
            match (
                serde_json::from_str::<Json>(x),
                serde_json::from_str::<Json>(y),
            ) {
                (Ok(p), Ok(q)) => p == q,
                _ => x == y,
            }
        }
        _ => a == b,
    }
}

#[test]
fn every_type_copies_as_the_server_prints_it() {
    let pg = PgServer::start();
    pg.database("types", ALL_TYPES);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("out.db");
    let summary = import_postgres(
        &db,
        &pg.socket_url("types"),
        &PgOptions::default(),
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(summary.rows, 5);
    assert!(
        summary
            .notes
            .iter()
            .any(|n| n.contains("\"pt\"") && n.contains("point")),
        "a note for the point column: {:?}",
        summary.notes
    );
    assert!(!summary
        .notes
        .iter()
        .any(|n| n.contains("\"ip\"") || n.contains("\"m\"")));
    let (names, types, rows) = read_sqlite(&db, "all_types");
    assert_eq!(names.last().unwrap(), "Mixed Case \"q\"");

    // The reference: the server's text output of every value, in insertion order.
    let mut c = pg.client("types");
    c.batch_execute("SET TIME ZONE 'UTC'; SET DateStyle = ISO; SET extra_float_digits = 1")
        .unwrap();
    let tys: Vec<String> = c
        .query(
            "SELECT format_type(atttypid, NULL) FROM pg_attribute \
             WHERE attrelid = 'all_types'::regclass AND attnum > 0 ORDER BY attnum",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut want = vec![];
    for m in c.simple_query("SELECT * FROM all_types").unwrap() {
        if let postgres::SimpleQueryMessage::Row(r) = m {
            want.push(
                (0..r.len())
                    .map(|i| expected(&tys[i], r.get(i)))
                    .collect::<Vec<_>>(),
            );
        }
    }
    assert_eq!(rows.len(), want.len());
    for (r, (got, w)) in rows.iter().zip(&want).enumerate() {
        for (i, (g, w)) in got.iter().zip(w).enumerate() {
            assert!(
                same(g, w),
                "row {r}, column {} ({}): got {g:?}, want {w:?}",
                names[i],
                tys[i]
            );
        }
    }
    let declared: Vec<(&str, &str)> = names
        .iter()
        .map(String::as_str)
        .zip(types.iter().map(String::as_str))
        .collect();
    for (col, ty) in [
        ("i8", "INTEGER"),
        ("f4", "REAL"),
        ("n", "TEXT"),
        ("b", "INTEGER"),
        ("by", "BLOB"),
        ("ts", "TEXT"),
        ("dom", "INTEGER"),
        ("ia", "TEXT"),
    ] {
        assert!(declared.contains(&(col, ty)), "{col} {ty} in {declared:?}");
    }

    // numeric as REAL on request.
    let db2 = dir.path().join("real.db");
    let mut opts = ImportOptions::default();
    opts.read.decimals = liteload::source::columnar::Decimals::Real;
    let mut pick = PgOptions::default();
    pick.query = Some("SELECT n2, n, i2 AS n FROM all_types ORDER BY i4 NULLS LAST".into());
    opts.table = Some("nums".into());
    import_postgres(
        &db2,
        &pg.socket_url("types"),
        &pick,
        &opts,
        &Progress::default(),
    )
    .unwrap();
    let (names, types, rows) = read_sqlite(&db2, "nums");
    assert_eq!(
        names,
        ["n2", "n", "n_2"],
        "two columns of one name are told apart"
    );
    assert_eq!(types, ["REAL", "REAL", "INTEGER"]);
    assert_eq!(rows[0][0], Sql::Real(-0.5));
    assert_eq!(rows[1][1], Sql::Real(f64::INFINITY));
    assert_eq!(rows[2][1], Sql::Real(1.0e-30));
    assert_eq!(rows[3][1], Sql::Null, "numeric NaN is NULL as REAL");
}

#[test]
fn keys_and_indexes_and_pieces() {
    let pg = PgServer::start();
    // Wide enough rows that each table is cut into several pieces (2048 blocks and more).
    pg.database(
        "keys",
        "CREATE TABLE keyed (id bigint PRIMARY KEY, code text UNIQUE, grp int, pad text);
         INSERT INTO keyed SELECT g * 3 - 100000, 'c' || g, g % 97, repeat('x', 200) FROM generate_series(1, 120000) g;
         ANALYZE keyed;
         CREATE INDEX keyed_grp ON keyed (grp, code);
         CREATE INDEX keyed_expr ON keyed (lower(code));
         CREATE INDEX keyed_part ON keyed (grp) WHERE grp > 5;
         CREATE TABLE pair (a int, b text, n int, PRIMARY KEY (a, b));
         INSERT INTO pair SELECT g % 1000, 'b' || g, g FROM generate_series(1, 150000) g;
         CREATE INDEX pair_gin ON pair USING hash (b);
         DELETE FROM pair WHERE n % 10 = 0;
         CREATE TABLE nulls (a int UNIQUE, b text UNIQUE, c int, d text, UNIQUE (c, d));
         INSERT INTO nulls VALUES (NULL, NULL, NULL, 'x'), (NULL, NULL, NULL, 'x'), (1, 'x', 1, NULL), (2, 'y', 1, NULL);
         CREATE TABLE \"Pair\" (x int);
         INSERT INTO \"Pair\" VALUES (1), (2);
         CREATE SCHEMA other; CREATE TABLE other.t (v text); INSERT INTO other.t VALUES ('o');",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("keys.db");
    let mut pgo = PgOptions::default();
    pgo.connections = Some(3);
    let summary = import_postgres(
        &db,
        &pg.socket_url("keys"),
        &pgo,
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(summary.rows, 120_000 + 135_000 + 2 + 4);
    let notes = summary.notes.join("\n");
    for skipped in ["keyed_expr", "keyed_part", "pair_gin"] {
        assert!(notes.contains(skipped), "{skipped} in {notes}");
    }
    assert!(!notes.contains("ran again"), "{notes}");
    // "Pair" sorts first (C collation) and keeps its name.
    assert!(
        notes.contains("public.pair: loaded as table \"pair_2\""),
        "{notes}"
    );
    let c = Connection::open(&db).unwrap();
    support::assert_intact(&c);
    // The integer key is the rowid, and every row came in key order.
    let create: String = c
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'keyed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(create.contains("\"id\" INTEGER PRIMARY KEY"), "{create}");
    let (n, bad, sum): (i64, i64, i64) = c
        .query_row(
            "SELECT count(*), sum(rowid != id OR id IS NULL), sum(id) FROM keyed",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((n, bad), (120_000, 0));
    let want: i64 = pg
        .client("keys")
        .query_one("SELECT sum(id)::int8 FROM keyed", &[])
        .unwrap()
        .get(0);
    assert_eq!(sum, want);
    let indexes: Vec<(String, String, i64)> = c
        .prepare(
            "SELECT m.name, group_concat(ii.name, ','), m.\"unique\" FROM sqlite_schema s \
             JOIN pragma_index_list(s.name) m JOIN pragma_index_info(m.name) ii \
             WHERE s.type = 'table' GROUP BY s.name, m.name ORDER BY s.name, m.name",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let shown: Vec<(&str, i64)> = indexes
        .iter()
        .map(|(_, cols, u)| (cols.as_str(), *u))
        .collect();
    assert_eq!(
        shown,
        [
            ("code", 1),
            ("grp,code", 0),
            ("a", 1),
            ("b", 1),
            ("c,d", 1),
            ("a,b", 1)
        ],
        "{indexes:?}"
    );
    // The indexes answer as SQLite's own would: every key found.
    let found: i64 = c
        .query_row(
            "SELECT count(*) FROM pair_2 INDEXED BY \"pair_pkey\" WHERE a = 7 AND b >= ''",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let want: i64 = pg
        .client("keys")
        .query_one("SELECT count(*) FROM pair WHERE a = 7", &[])
        .unwrap()
        .get(0);
    assert_eq!(found, want);

    // Another schema, some tables, and a query.
    let db = dir.path().join("other.db");
    let mut pgo = PgOptions::default();
    pgo.schema = Some("other".into());
    import_postgres(
        &db,
        &pg.socket_url("keys"),
        &pgo,
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    let (_, _, rows) = read_sqlite(&db, "t");
    assert_eq!(rows, [[Sql::Text("o".into())]]);
    let db = dir.path().join("some.db");
    let mut pgo = PgOptions::default();
    pgo.tables = vec!["Pair".into()];
    import_postgres(
        &db,
        &pg.socket_url("keys"),
        &pgo,
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    let (_, _, rows) = read_sqlite(&db, "Pair");
    assert_eq!(rows.len(), 2);

    // Into a file that exists (rollback mode): in place past its end, the same keys.
    let existing = dir.path().join("existing.db");
    Connection::open(&existing)
        .unwrap()
        .execute_batch("CREATE TABLE mine (x); INSERT INTO mine VALUES (1);")
        .unwrap();
    let mut pgo = PgOptions::default();
    pgo.tables = vec!["keyed".into()];
    let summary = import_postgres(
        &existing,
        &pg.socket_url("keys"),
        &pgo,
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    assert!(
        summary
            .notes
            .iter()
            .any(|n| n.starts_with("written in place")),
        "{:?}",
        summary.notes
    );
    assert!(!dir.path().join("existing.db-journal").exists());
    let c = Connection::open(&existing).unwrap();
    support::assert_intact(&c);
    let (n, bad): (i64, i64) = c
        .query_row("SELECT count(*), sum(rowid != id) FROM keyed", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((n, bad), (120_000, 0));
    let ix: i64 = c
        .query_row("SELECT count(*) FROM pragma_index_list('keyed')", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(ix, 2);
}

#[test]
fn failures_are_clear_and_leave_no_file() {
    let pg = PgServer::start();
    pg.database(
        "big",
        "CREATE TABLE big (id int, v text);
         INSERT INTO big SELECT g, repeat('v', 100) FROM generate_series(1, 3000000) g;",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let run = |url: &str, pgo: &PgOptions| {
        import_postgres(
            &db,
            url,
            pgo,
            &ImportOptions::default(),
            &Progress::default(),
        )
    };
    let tcp = pg.tcp_url("big");
    let no_file = |what: &str| {
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{what} left {left:?}");
    };

    // A wrong password: the server's words, the password never shown.
    let e = run(
        &tcp.replace("postgres@", "postgres:wrong-pw@"),
        &PgOptions::default(),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e.kind(), ErrorKind::Database { .. }), "{text}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("wrong-pw"), "{text}");
    no_file("a wrong password");

    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let e = run(
        &format!(
            "postgresql://postgres:{}@127.0.0.1:{port}/big",
            support::pg::PASSWORD
        ),
        &PgOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("onnection refused"), "{e}");
    no_file("no server");

    // A table that is not there.
    let mut pgo = PgOptions::default();
    pgo.tables = vec!["nope".into()];
    let e = run(&pg.socket_url("big"), &pgo).unwrap_err();
    assert!(
        e.to_string().contains("no table \"nope\" (tables: big)"),
        "{e}"
    );
    no_file("a missing table");

    // The password from the password file, over TCP.
    let pass = dir.path().join("pgpass");
    std::fs::write(
        &pass,
        format!("127.0.0.1:*:big:postgres:{}\n", support::pg::PASSWORD),
    )
    .unwrap();
    std::env::set_var("PGPASSFILE", &pass);
    let mut pgo = PgOptions::default();
    pgo.query = Some("SELECT 1 AS one".into());
    let mut opts = ImportOptions::default();
    opts.table = Some("one".into());
    import_postgres(&db, &tcp, &pgo, &opts, &Progress::default()).unwrap();
    std::env::remove_var("PGPASSFILE");
    std::fs::remove_file(&db).unwrap();
    std::fs::remove_file(&pass).unwrap();

    // The server dies while the rows are copied.
    let progress = Progress::default();
    std::thread::scope(|s| {
        let load = s.spawn(|| {
            import_postgres(
                &db,
                &pg.socket_url("big"),
                &PgOptions::default(),
                &ImportOptions::default(),
                &progress,
            )
        });
        while progress
            .bytes_read
            .load(std::sync::atomic::Ordering::Relaxed)
            < 1 << 20
        {
            assert!(
                !load.is_finished(),
                "the copy ended before the server was stopped"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        pg.kill();
        let e = load.join().unwrap().unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Database { .. }), "{e}");
    });
    no_file("a server that died");
}

#[test]
fn sslmode_is_honored() {
    let pg = PgServer::start_tls();
    pg.database("tls", "CREATE TABLE t (x int); INSERT INTO t VALUES (1);");
    let dir = tempfile::tempdir().unwrap();
    // What the copy's own connection says of itself: 1 when it is encrypted.
    let mut pgo = PgOptions::default();
    pgo.query = Some("SELECT ssl::int AS ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()".into());
    let mut opts = ImportOptions::default();
    opts.table = Some("s".into());
    let pw = support::pg::PASSWORD;
    let url = |host: &str, params: &str| {
        format!("postgresql://postgres:{pw}@{host}:{}/tls?{params}", pg.port)
    };
    let ssl_of = |url: &str| -> Result<i64, liteload::Error> {
        let db = dir.path().join("ssl.db");
        let _ = std::fs::remove_file(&db);
        import_postgres(&db, url, &pgo, &opts, &Progress::default())?;
        let c = Connection::open(&db).unwrap();
        Ok(c.query_row("SELECT ssl FROM s", [], |r| r.get(0)).unwrap())
    };
    let ca = pg.ca_pem().display().to_string();
    let other = pg.other_ca_pem().display().to_string();
    assert_eq!(ssl_of(&url("127.0.0.1", "sslmode=disable")).unwrap(), 0);
    assert_eq!(ssl_of(&url("127.0.0.1", "sslmode=prefer")).unwrap(), 1);
    assert_eq!(ssl_of(&url("127.0.0.1", "sslmode=require")).unwrap(), 1);
    assert_eq!(
        ssl_of(&url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}")
        ))
        .unwrap(),
        1
    );
    assert_eq!(
        ssl_of(&url(
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={ca}")
        ))
        .unwrap(),
        1
    );
    // A certificate that the named root did not sign is refused, and leaves no file.
    let e = ssl_of(&url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={other}"),
    ))
    .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Database { .. }), "{e}");
    assert!(!e.to_string().contains(pw), "{e}");
    assert!(!dir.path().join("ssl.db").exists());
}

#[test]
fn statistics_that_say_key_order_are_checked() {
    let pg = PgServer::start();
    // The statistics say the heap is in key order; then rows move (an update writes a
    // new version elsewhere), and the statistics are not told.
    pg.database(
        "moved",
        "CREATE TABLE moved (id int PRIMARY KEY, v text);
         INSERT INTO moved SELECT g, 'v' || g FROM generate_series(1, 20000) g;
         ANALYZE moved;
         UPDATE moved SET v = 'changed' WHERE id % 97 = 0;",
    );
    let corr: f32 = pg
        .client("moved")
        .query_one(
            "SELECT correlation FROM pg_stats WHERE tablename = 'moved' AND attname = 'id'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        corr, 1.0,
        "the statistics must claim key order for this test"
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("moved.db");
    let summary = import_postgres(
        &db,
        &pg.socket_url("moved"),
        &PgOptions::default(),
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(summary.rows, 20_000);
    assert!(
        summary.notes.iter().any(|n| n.contains("ran again")),
        "{:?}",
        summary.notes
    );
    let c = Connection::open(&db).unwrap();
    support::assert_intact(&c);
    let (n, bad, changed): (i64, i64, i64) = c
        .query_row(
            "SELECT count(*), sum(rowid != id), sum(v = 'changed') FROM moved",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((n, bad, changed), (20_000, 0, 20_000 / 97));
}

/// The corners a user meets, each against what the server itself says (psql's text):
/// index and table names that are one name to SQLite, a query ending in a comment or
/// `;`, a domain over a domain, a composite whose fields are all NULL, inheritance and
/// partitions copied once, and timestamptz inside arrays as a timestamptz column is.
#[test]
fn the_corners_are_as_the_server_says() {
    let pg = PgServer::start();
    pg.database(
        "corners",
        "ALTER DATABASE corners SET timezone = 'Asia/Kolkata';
         CREATE TABLE collide (a_b int, a int, b int);
         INSERT INTO collide VALUES (1, 1, 1), (2, 1, 2), (3, 2, 1);
         CREATE INDEX idx_collide_a_b ON collide (a_b);
         CREATE UNIQUE INDEX \"IDX_COLLIDE_A_B\" ON collide (a, b);
         CREATE TABLE t2 (a int); INSERT INTO t2 VALUES (1);
         CREATE INDEX \"IDX_T2_A\" ON t2 (a);
         CREATE TABLE idx_t2_a (x int); INSERT INTO idx_t2_a VALUES (9);
         CREATE DOMAIN d1 AS bigint CHECK (VALUE > 0); CREATE DOMAIN d2 AS d1;
         CREATE TYPE pair AS (x int, y text);
         CREATE TABLE shapes (dd d2, p pair);
         INSERT INTO shapes VALUES (5, ROW(NULL, NULL)), (6, NULL), (7, ROW(1, 'a b'));
         CREATE TABLE parent (v int); CREATE TABLE child (w int) INHERITS (parent);
         INSERT INTO parent VALUES (1); INSERT INTO child VALUES (2, 3);
         CREATE TABLE part (k int, v text) PARTITION BY RANGE (k);
         CREATE TABLE part_lo PARTITION OF part FOR VALUES FROM (0) TO (10);
         CREATE TABLE part_hi PARTITION OF part FOR VALUES FROM (10) TO (20);
         INSERT INTO part VALUES (1, 'lo'), (15, 'hi');
         CREATE TABLE zones (s timestamptz, a timestamptz[]);
         INSERT INTO zones VALUES
           ('2026-11-28 12:34:56.5-08:30', ARRAY['2026-11-28 12:34:56.5-08:30'::timestamptz, NULL, 'infinity']),
           ('0044-03-15 12:00:00+00 BC', ARRAY['0044-03-15 12:00:00+00 BC'::timestamptz]),
           ('2000-01-01 00:00:00+00', '{}');",
    );
    let dir = tempfile::tempdir().unwrap();
    let copy = |db: &std::path::Path, pgo: &PgOptions, opts: &ImportOptions| {
        import_postgres(
            db,
            &pg.socket_url("corners"),
            pgo,
            opts,
            &Progress::default(),
        )
    };
    // Into a new file and into one that holds objects of the names the copy wants.
    let new = dir.path().join("new.db");
    let old = dir.path().join("old.db");
    Connection::open(&old)
        .unwrap()
        .execute_batch(
            "CREATE TABLE other (a_b int); CREATE INDEX \"IDX_collide_A_B_2\" ON other (a_b);",
        )
        .unwrap();
    for db in [&new, &old] {
        copy(db, &PgOptions::default(), &ImportOptions::default()).unwrap();
        let c = Connection::open(db).unwrap();
        support::assert_intact(&c);
        // Every source index is there, on its columns; the UNIQUE one enforces.
        let ix = |t: &str| -> Vec<(String, i64)> {
            c.prepare(&format!(
                "SELECT (SELECT group_concat(name) FROM pragma_index_info(il.name)), il.\"unique\" \
                 FROM pragma_index_list('{t}') il ORDER BY 1"
            ))
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
        };
        assert_eq!(
            ix("collide"),
            vec![("a,b".to_string(), 1), ("a_b".to_string(), 0)],
            "{}",
            db.display()
        );
        assert!(c
            .execute("INSERT INTO collide VALUES (9, 1, 1)", [])
            .is_err());
        assert_eq!(ix("t2"), vec![("a".to_string(), 0)]);
        let x: i64 = c
            .query_row("SELECT x FROM idx_t2_a", [], |r| r.get(0))
            .unwrap();
        assert_eq!(x, 9);
        // A domain over a domain is its base type.
        let (ty, v): (String, i64) = c
            .query_row(
                "SELECT (SELECT type FROM pragma_table_info('shapes') WHERE name = 'dd'), dd FROM shapes LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((ty.as_str(), v), ("INTEGER", 5));
        // Composites by their own NULL-ness, as psql prints them.
        let mut server = pg.client("corners");
        let want: Vec<Option<String>> = server
            .query("SELECT p::text FROM shapes ORDER BY dd", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let got: Vec<Option<String>> = c
            .prepare("SELECT p FROM shapes ORDER BY dd")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, want);
        assert_eq!(want[0].as_deref(), Some("(,)"));
        // Inheritance: each table's own rows (pg_dump's ONLY); partitions: the parent
        // whole, the partitions not again.
        let count = |t: &str| -> i64 {
            c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!((count("parent"), count("child"), count("part")), (1, 1, 2));
        let partitions: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name IN ('part_lo', 'part_hi')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(partitions, 0);
        // timestamptz in an array is the column's text, whatever the session's zone.
        let rows: Vec<(String, String)> = c
            .prepare("SELECT s, a FROM zones ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (s, a) in &rows[..2] {
            let a: Json = serde_json::from_str(a).unwrap();
            assert_eq!(a[0].as_str(), Some(s.as_str()), "{a}");
        }
        assert_eq!(rows[0].1, format!("[\"{}\",null,\"infinity\"]", rows[0].0));
        assert_eq!(rows[2].1, "[]");
    }
    // A query as psql takes it: a trailing comment, a trailing `;`.
    for (k, q) in [
        "SELECT a, b FROM collide ORDER BY a_b -- the rows",
        "SELECT a, b FROM collide ORDER BY a_b;",
        "SELECT a, b FROM collide ORDER BY a_b; -- done\n",
    ]
    .iter()
    .enumerate()
    {
        let db = dir.path().join(format!("q{k}.db"));
        let mut pgo = PgOptions::default();
        pgo.query = Some(q.to_string());
        let mut opts = ImportOptions::default();
        opts.table = Some("q".into());
        let s = copy(&db, &pgo, &opts).unwrap_or_else(|e| panic!("{q:?}: {e}"));
        assert_eq!(s.rows, 3, "{q:?}");
    }
}

#[test]
fn views_copy_as_tables_when_asked_and_every_object_left_behind_is_named() {
    let pg = PgServer::start();
    pg.database(
        "objects",
        "CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL DEFAULT 'anon',
                                 age int CHECK (age >= 0),
                                 CONSTRAINT named CHECK (char_length(name) > 1 AND name <> 'root'));
         CREATE TABLE orders (id serial PRIMARY KEY, customer int REFERENCES customers (id),
                              total numeric DEFAULT 0 CHECK (total >= 0));
         INSERT INTO customers VALUES (1, 'Zoë', 30), (2, 'Bo', 40);
         INSERT INTO orders (customer, total) VALUES (1, 10.5), (1, 2), (2, 7);
         CREATE VIEW big_spenders AS
           SELECT c.name, sum(o.total) AS spent FROM customers c JOIN orders o ON o.customer = c.id
           GROUP BY c.name HAVING sum(o.total) > 5;
         CREATE MATERIALIZED VIEW order_count AS SELECT count(*) AS n FROM orders;
         CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
         CREATE TRIGGER orders_touch BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION touch();",
    );
    let dir = tempfile::tempdir().unwrap();
    let copy = |db: &std::path::Path, views: bool| {
        let mut pgo = PgOptions::default();
        pgo.views = views;
        import_postgres(
            db,
            &pg.socket_url("objects"),
            &pgo,
            &ImportOptions::default(),
            &Progress::default(),
        )
        .unwrap()
    };
    let plain = dir.path().join("plain.db");
    let s = copy(&plain, false);
    assert_eq!(s.tables, ["customers", "orders"]);
    let has = |notes: &[String], want: &str| {
        assert!(
            notes.iter().any(|n| n.contains(want)),
            "no note has {want:?}: {notes:#?}"
        )
    };
    for want in [
        "public.big_spenders: view not copied",
        "public.order_count: materialized view not copied",
        "public.orders_id_seq: sequence not copied",
        "public.touch: function not copied",
        "public.orders: foreign key \"orders_customer_fkey\" not carried: FOREIGN KEY (customer) REFERENCES customers(id)",
        "public.orders: CHECK constraint \"orders_total_check\" not carried: CHECK ((total >= (0)::numeric))",
        "public.orders: column \"total\"'s default not carried: 0",
        "public.orders: column \"id\"'s default not carried: nextval('orders_id_seq'::regclass)",
        "public.orders: trigger \"orders_touch\" not copied",
    ] {
        has(&s.notes, want);
    }
    // A constant default SQLite stores as the copy stores the column is declared.
    let c = Connection::open(&plain).unwrap();
    let sql: String = c
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'customers'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(sql.contains("\"name\" TEXT DEFAULT 'anon'"), "{sql}");
    // CHECKs SQLite evaluates as PostgreSQL does are declared (and hold the rows); the
    // one on a numeric (copied as its exact text) is named instead.
    assert!(
        sql.contains("CONSTRAINT \"customers_age_check\" CHECK ((\"age\" >= 0))"),
        "{sql}"
    );
    assert!(
        sql.contains(
            "CONSTRAINT \"named\" CHECK (((length(\"name\") > 1) AND (\"name\" <> 'root')))"
        ),
        "{sql}"
    );
    assert!(
        !s.notes
            .iter()
            .any(|n| n.contains("customers_age_check") || n.contains("\"named\"")),
        "{:#?}",
        s.notes
    );
    for bad in [
        "INSERT INTO customers (id, age) VALUES (8, -1)",
        "INSERT INTO customers (id, name) VALUES (8, 'root')",
    ] {
        let e = c.execute(bad, []).unwrap_err();
        assert!(
            e.to_string().contains("CHECK constraint failed"),
            "{bad}: {e}"
        );
    }
    c.execute("INSERT INTO customers (id) VALUES (9)", [])
        .unwrap();
    let name: String = c
        .query_row("SELECT name FROM customers WHERE id = 9", [], |r| r.get(0))
        .unwrap();
    assert_eq!(name, "anon");
    assert!(
        !s.notes.iter().any(|n| n.contains("\"name\"'s default")),
        "{:#?}",
        s.notes
    );
    // With views: each a table of its rows, its SQL in the notes; nothing else changes.
    let with = dir.path().join("views.db");
    let s = copy(&with, true);
    assert_eq!(
        s.tables,
        ["big_spenders", "customers", "order_count", "orders"]
    );
    has(&s.notes, "public.big_spenders: view copied as a table of its rows; its SQL (PostgreSQL's, not SQLite's): SELECT c.name, sum(o.total) AS spent");
    has(
        &s.notes,
        "public.order_count: materialized view copied as a table",
    );
    assert!(
        !s.notes.iter().any(|n| n.contains("view not copied")),
        "{:#?}",
        s.notes
    );
    let c = Connection::open(&with).unwrap();
    support::assert_intact(&c);
    let spent: Vec<(String, String)> = c
        .prepare("SELECT name, spent FROM big_spenders ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        spent,
        [
            ("Bo".to_string(), "7".to_string()),
            ("Zoë".to_string(), "12.5".to_string())
        ]
    );
    let n: i64 = c
        .query_row("SELECT n FROM order_count", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3);
    // Views go with a schema's tables, not with a query.
    let mut pgo = PgOptions::default();
    pgo.views = true;
    pgo.query = Some("SELECT 1".into());
    let mut o = ImportOptions::default();
    o.table = Some("q".into());
    let e = import_postgres(
        dir.path().join("q.db"),
        &pg.socket_url("objects"),
        &pgo,
        &o,
        &Progress::default(),
    )
    .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Usage(_)), "{e}");
}

#[test]
fn foreign_keys_between_copied_tables_are_declared_when_asked_and_checked() {
    let pg = PgServer::start();
    pg.database(
        "fks",
        "CREATE TABLE customers (id int PRIMARY KEY, email text UNIQUE, region text);
         CREATE TABLE regions (code text, zone int, PRIMARY KEY (code, zone));
         CREATE TABLE orders (id bigint PRIMARY KEY,
                              customer int REFERENCES customers (id),
                              by_email text REFERENCES customers (email),
                              code text, zone int,
                              FOREIGN KEY (code, zone) REFERENCES regions (code, zone));
         CREATE TABLE notes (o bigint, t text);
         INSERT INTO customers VALUES (1, 'a@x', 'n'), (2, 'b@x', 's');
         INSERT INTO regions VALUES ('n', 1);
         INSERT INTO orders VALUES (10, 1, 'a@x', 'n', 1), (11, 2, NULL, NULL, NULL);
         INSERT INTO notes VALUES (10, 'ok'), (99, 'orphan');
         -- The orphan got in before the key, which is NOT VALID.
         ALTER TABLE notes ADD CONSTRAINT notes_o_fkey FOREIGN KEY (o) REFERENCES orders (id) NOT VALID;",
    );
    let dir = tempfile::tempdir().unwrap();
    let copy = |db: &std::path::Path, fks: bool, tables: &[&str]| {
        let mut pgo = PgOptions::default();
        pgo.foreign_keys = fks;
        pgo.tables = tables.iter().map(|t| t.to_string()).collect();
        import_postgres(
            db,
            &pg.socket_url("fks"),
            &pgo,
            &ImportOptions::default(),
            &Progress::default(),
        )
        .unwrap()
    };
    let fk_list = |db: &std::path::Path, t: &str| -> Vec<(String, String, String)> {
        let c = Connection::open(db).unwrap();
        support::assert_intact(&c);
        let got = c.prepare(&format!(
            "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list('{t}') ORDER BY \"from\""
        ))
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
        got
    };
    let s3 = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    let with = dir.path().join("with.db");
    let s = copy(&with, true, &[]);
    assert_eq!(
        fk_list(&with, "orders"),
        [
            s3("customers", "by_email", "email"),
            s3("regions", "code", "code"),
            s3("customers", "customer", "id"),
            s3("regions", "zone", "zone")
        ]
    );
    assert_eq!(fk_list(&with, "notes"), [s3("orders", "o", "id")]);
    let has = |notes: &[String], want: &str| {
        assert!(
            notes.iter().any(|n| n.contains(want)),
            "no note has {want:?}: {notes:#?}"
        )
    };
    // A key of two columns to a two-column primary key (a UNIQUE index here) is
    // declared, and named nowhere.
    assert!(
        !s.notes.iter().any(|n| n.contains("orders_code_zone_fkey")),
        "{:#?}",
        s.notes
    );
    has(
        &s.notes,
        "table \"notes\": 1 row whose foreign key finds no parent",
    );
    assert!(
        !s.notes.iter().any(|n| n.contains("orders_customer_fkey")),
        "{:#?}",
        s.notes
    );
    // The rows are those of the server, keys and all.
    let c = Connection::open(&with).unwrap();
    let orphans: i64 = c
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(orphans, 1);
    // Without the flag nothing is declared, every key named; a key to a table not
    // copied is not declared, and says why.
    let without = dir.path().join("without.db");
    let s = copy(&without, false, &[]);
    assert!(fk_list(&without, "orders").is_empty());
    has(&s.notes, "public.orders: foreign key \"orders_customer_fkey\" not carried: FOREIGN KEY (customer) REFERENCES customers(id)");
    let some = dir.path().join("some.db");
    let s = copy(&some, true, &["orders", "regions"]);
    has(&s.notes, "public.orders: foreign key \"orders_customer_fkey\" not declared (the table it references, public.customers, is not copied)");
    assert_eq!(
        fk_list(&some, "orders"),
        [s3("regions", "code", "code"), s3("regions", "zone", "zone")]
    );
}

/// CHECK constraints the copy declares, tried row by row against PostgreSQL's own: a
/// row one accepts the other accepts, a row one refuses the other refuses; and those
/// the copy cannot declare as PostgreSQL evaluates them are named instead.
#[test]
fn carried_check_constraints_accept_and_refuse_the_rows_postgresql_does() {
    let pg = PgServer::start();
    let carried = [
        "age >= 0",
        "age > -2 AND qty < 10",
        "qty * 2 + age <> 7",
        "status IN ('new', 'done', 'é', '')",
        "char_length(status) > 0 OR status IS NULL",
        "status <> 'x' OR age IS NULL",
        "NOT (age = qty)",
        "-age < 3",
        "qty - age >= -2",
        "f > 0.25 OR f IS NULL",
        "f * 2 < 3.5",
        "status::text <> 'it''s'",
    ];
    let named = [
        "status > 'a'",
        "age / 2 < 4",
        "lower(status) <> 'new'",
        "big >= 0",
    ];
    // Table t has every constraint (what is named); r those carried (the rows tried).
    let columns = "id int PRIMARY KEY, age int, qty bigint, f float8, status varchar(20), \
                   big numeric";
    let ddl = support::check_tables(columns, &carried, &named);
    pg.database("checks", &ddl);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let s = import_postgres(
        &db,
        &pg.socket_url("checks"),
        &PgOptions::default(),
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    for i in 0..carried.len() + named.len() {
        let noted = s
            .notes
            .iter()
            .any(|n| n.contains(&format!("\"c{i:02}\" not carried")));
        assert_eq!(noted, i >= carried.len(), "c{i:02}: {:#?}", s.notes);
    }
    let lite = Connection::open(&db).unwrap();
    let mut client = pg.client("checks");
    let ages = support::AGES;
    let qtys = support::QTYS;
    let fs = [
        None,
        Some(0.1f64),
        Some(0.25),
        Some(0.5),
        Some(1.7),
        Some(1.75),
    ];
    let statuses = [
        None,
        Some("new"),
        Some("done"),
        Some("é"),
        Some(""),
        Some("x"),
        Some("NEW"),
        Some("it's"),
    ];
    let mut rng = support::Rng(0x2545_f491_4f6c_dd1d);
    support::same_verdicts(400, |id| {
        let id = id as i32;
        let (age, qty, f, status) = (
            ages[rng.below(ages.len())],
            qtys[rng.below(qtys.len())],
            fs[rng.below(fs.len())],
            statuses[rng.below(statuses.len())],
        );
        let in_pg = client
            .execute(
                "INSERT INTO r (id, age, qty, f, status) VALUES ($1, $2, $3, $4, $5)",
                &[&id, &age, &qty, &f, &status],
            )
            .is_ok();
        let in_lite = lite.execute(
            "INSERT INTO r (id, age, qty, f, status) VALUES (?1, ?2, ?3, ?4, ?5)",
            liteload::rusqlite::params![id, age, qty, f, status],
        );
        (in_pg, in_lite, format!("{age:?} {qty:?} {f:?} {status:?}"))
    });
}
