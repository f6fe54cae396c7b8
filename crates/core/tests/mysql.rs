//! MySQL/MariaDB into SQLite against a real MariaDB server (see `support/mysql.rs`):
//! every cell of every mapped type, hostile values and random ones, equals the server's
//! own text output (the text protocol, not the binary one liteload reads) mapped by the
//! documented table; keys and indexes; one snapshot across the connections while a
//! writer runs; and the failures a user meets (a wrong password, a missing table, a
//! server killed mid-copy), each a clear error that leaves no file.
#![cfg(feature = "mysql")]

mod support;

use liteload::mysql::{import_mysql, MysqlOptions};
use liteload::rusqlite::{types::Value as Sql, Connection};
use liteload::{ErrorKind, ImportOptions, Progress};
use mysql::prelude::Queryable;
use support::mysql::MyServer;
use support::Rng;

/// Every type of the documented table. The server runs in +05:30, so that a TIMESTAMP
/// read in the server's zone would differ from its UTC instant.
const ALL_TYPES: &str = "CREATE TABLE all_types (
  id INT PRIMARY KEY,
  ti TINYINT, si SMALLINT, mi MEDIUMINT, ii INT, bi BIGINT, uti TINYINT UNSIGNED,
  ui INT UNSIGNED, ubi BIGINT UNSIGNED, yr YEAR, bt BIT(10), b64 BIT(64),
  f FLOAT, d DOUBLE, dec1 DECIMAL(65,30), dec2 DECIMAL(5,2),
  dt DATE, dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME, tm2 TIME(2),
  c CHAR(10), vc VARCHAR(300), lat VARCHAR(50) CHARACTER SET latin1, u3 VARCHAR(50) CHARACTER SET utf8mb3,
  tx LONGTEXT, e ENUM('a','b c','ü'), st SET('x','y','z'), j JSON,
  bin BINARY(4), vb VARBINARY(100), bl LONGBLOB, g GEOMETRY
) DEFAULT CHARSET=utf8mb4";

/// The kinds of the columns after `id`, as the test maps the server's text.
#[derive(Clone, Copy, PartialEq)]
enum K {
    Int,
    UBig,
    Bits,
    Year,
    Float,
    Double,
    Text,
    Date,
    DateTime,
    Stamp,
    Blob,
    Geo,
}

const KINDS: &[(&str, K)] = &[
    ("ti", K::Int),
    ("si", K::Int),
    ("mi", K::Int),
    ("ii", K::Int),
    ("bi", K::Int),
    ("uti", K::Int),
    ("ui", K::Int),
    ("ubi", K::UBig),
    ("yr", K::Year),
    ("bt", K::Bits),
    ("b64", K::Bits),
    ("f", K::Float),
    ("d", K::Double),
    ("dec1", K::Text),
    ("dec2", K::Text),
    ("dt", K::Date),
    ("dtm", K::DateTime),
    ("dtm6", K::DateTime),
    ("ts", K::Stamp),
    ("tm", K::Text),
    ("tm2", K::Text),
    ("c", K::Text),
    ("vc", K::Text),
    ("lat", K::Text),
    ("u3", K::Text),
    ("tx", K::Text),
    ("e", K::Text),
    ("st", K::Text),
    ("j", K::Text),
    ("bin", K::Blob),
    ("vb", K::Blob),
    ("bl", K::Blob),
    ("g", K::Geo),
];

/// The server's text (or bytes) of a cell mapped by the documented table.
fn expected(kind: K, raw: Option<Vec<u8>>) -> Sql {
    let Some(raw) = raw else { return Sql::Null };
    let text = || String::from_utf8(raw.clone()).unwrap();
    let int = |u: u64| i64::try_from(u).map_or_else(|_| Sql::Text(u.to_string()), Sql::Integer);
    match kind {
        K::Int | K::Year => Sql::Integer(text().parse().unwrap()),
        K::UBig => int(text().parse().unwrap()),
        K::Bits => int(raw.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b))),
        K::Float | K::Double => Sql::Real(text().parse().unwrap()),
        K::Text => Sql::Text(text()),
        K::Date => Sql::Text(text()),
        K::DateTime => Sql::Text(text().replacen(' ', "T", 1)),
        K::Stamp => Sql::Text(format!("{}Z", text().replacen(' ', "T", 1))),
        K::Blob => Sql::Blob(raw),
        K::Geo => Sql::Blob(raw[4..].to_vec()),
    }
}

/// Whether `got` is `want`: REALs within the server's printed digits (MariaDB prints a
/// FLOAT with 6 significant digits and a DOUBLE with 15, where the copy keeps them all).
fn same(kind: K, got: &Sql, want: &Sql) -> bool {
    match (got, want) {
        (Sql::Real(g), Sql::Real(w)) => {
            let tol = if kind == K::Float { 5e-6 } else { 5e-15 };
            g == w || ((g - w) / w).abs() <= tol
        }
        _ => got == want,
    }
}

/// Hostile rows first, then `random` random ones.
fn rows(random: usize) -> Vec<String> {
    let mut out = vec![
        "(1, -128, -32768, -8388608, -2147483648, -9223372036854775808, 255, 4294967295, 18446744073709551615, 2155, b'1111111111', b'1111111111111111111111111111111111111111111111111111111111111111', 3.4028234e38, 1.7976931348623157e308, '-99999999999999999999999999999999999.999999999999999999999999999999', -999.99, '1000-01-01', '9999-12-31 23:59:59', '2024-02-29 12:34:56.000001', '2038-01-19 03:14:07.999', '-838:59:59', '838:59:59.99', 'ab', 'emoji 🎉, quote \\\" '' and\\nnewline\\r\\ttab\\0nul', 'Ünïcödé ÿ', 'ünï €', REPEAT('long 🐢 ', 150000), 'ü', 'x,z', '{\"k\": [1, \"é\"], \"z\": null}', x'00000000', x'00ff00', REPEAT(x'00ff', 300000), ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))', 4326))".to_string(),
        "(2, 127, 32767, 8388607, 2147483647, 9223372036854775807, 0, 0, 9223372036854775808, 0, b'0', b'0', -1.1, -0.0, 0.000000000000000000000000000001, 0.5, '0000-00-00', '0000-00-00 00:00:00', '2024-00-00 00:00:00', '1970-01-01 00:00:01', '00:00:00', '-00:00:00.01', '', '', '', '', '', 'b c', '', '[]', x'0102', x'', x'', POINT(1.5, -2.5))".to_string(),
        "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)".to_string(),
    ];
    let mut rng = Rng(0x5eed_0f0a_5e00);
    let words = [
        "a", "é", "🎉", "\\\\", "''", "\\\"", " ", "\\0", "line\\n", "Ω", "x",
    ];
    for id in 0..random {
        let mut s = || {
            (0..rng.below(8))
                .map(|_| *rng.pick(&words))
                .collect::<String>()
        };
        let (t1, t2, t3) = (s(), s(), s());
        let mut rng2 = Rng(id as u64 + 7);
        let n = rng2.next();
        out.push(format!(
            "({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {:e}, {:e}, {}.{:03}, {}.{:02}, '{:04}-{:02}-{:02}', '2001-02-03 04:05:{:02}', '2001-02-03 04:05:06.{:06}', FROM_UNIXTIME({}), '{}:{:02}:{:02}', '-{}:00:00.5', '{t1}', '{t2}', 'x{}', '{t3}', '{t1}{t3}', 'a', 'y', '{{\"n\": {}}}', x'{:08x}', x'{:x}', x'{:016x}', POINT({}, 1))",
            id + 10,
            (n % 256) as i64 - 128,
            (n % 65536) as i64 - 32768,
            (n % 16_777_216) as i64 - 8_388_608,
            (n % 4_294_967_296) as i64 - 2_147_483_648,
            n as i64,
            n % 256,
            n % 4_294_967_296,
            n,
            1901 + n % 255,
            n % 1024,
            n,
            f32::from_bits((n % 0x7f00_0000) as u32),
            f64::from_bits(n % 0x7fe0_0000_0000_0000),
            (n % 1_000_000_000) as i64 - 500_000_000,
            n % 1000,
            (n % 1999) as i64 - 999,
            n % 100,
            1000 + n % 9000,
            1 + n % 12,
            1 + n % 28,
            n % 60,
            n % 1_000_000,
            1 + n % 2_000_000_000,
            n % 839,
            n % 60,
            n % 60,
            n % 800,
            n % 1000,
            n % 1000,
            n as u32,
            n | 1 << 60,
            n,
            (n % 1000) as f64 / 7.0,
        ));
    }
    out
}

/// Every column of `table` in the copy, by `id`.
fn read_sqlite(db: &std::path::Path, table: &str, cols: &[&str]) -> Vec<Vec<Sql>> {
    let c = Connection::open(db).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let list = cols
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut st = c
        .prepare(&format!("SELECT {list} FROM \"{table}\" ORDER BY id"))
        .unwrap();
    let n = cols.len();
    st.query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn every_type_copies_as_the_server_prints_it() {
    let my = MyServer::start();
    my.database("shop", ALL_TYPES);
    let mut c = my.conn("shop");
    c.query_drop("SET SESSION sql_mode = ''").unwrap();
    for chunk in rows(400).chunks(50) {
        c.query_drop(format!("INSERT INTO all_types VALUES {}", chunk.join(", ")))
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("copy.db");
    let mut mo = MysqlOptions::default();
    mo.connections = Some(3);
    let summary = import_mysql(
        &db,
        &my.socket_url("shop"),
        &mo,
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(summary.rows, 403);
    // The server's own text, in UTC as the copy's TIMESTAMPs are.
    c.query_drop("SET time_zone = '+00:00'").unwrap();
    let names: Vec<&str> = KINDS.iter().map(|k| k.0).collect();
    let sql = format!("SELECT id, {} FROM all_types ORDER BY id", names.join(", "));
    let want: Vec<Vec<Option<Vec<u8>>>> = c
        .query_iter(sql)
        .unwrap()
        .map(|r| {
            r.unwrap()
                .unwrap()
                .into_iter()
                .map(|v| match v {
                    mysql::Value::NULL => None,
                    mysql::Value::Bytes(b) => Some(b),
                    other => panic!("text protocol sent {other:?}"),
                })
                .collect()
        })
        .collect();
    let mut cols = vec!["id"];
    cols.extend(&names);
    let got = read_sqlite(&db, "all_types", &cols);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        let id = &g[0];
        for (i, (name, kind)) in KINDS.iter().enumerate() {
            let e = expected(*kind, w[i + 1].clone());
            assert!(
                same(*kind, &g[i + 1], &e),
                "row {id:?}, column {name}: copied {:?}, the server says {:?}",
                g[i + 1],
                e
            );
        }
    }
    // The declared types the documented table gives, and the exact doubles: the server's
    // 15 digits are not all of them, so REAL is also checked against the binary value.
    let conn = Connection::open(&db).unwrap();
    let decl: Vec<(String, String)> = conn
        .prepare("SELECT name, type FROM pragma_table_info('all_types')")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let ty = |n: &str| decl.iter().find(|d| d.0 == n).unwrap().1.clone();
    assert_eq!(ty("id"), "INTEGER");
    assert_eq!(
        (ty("ubi"), ty("b64"), ty("bt")),
        ("BLOB".into(), "BLOB".into(), "INTEGER".into())
    );
    assert_eq!(
        (ty("d"), ty("dec1"), ty("ts"), ty("bl")),
        ("REAL".into(), "TEXT".into(), "TEXT".into(), "BLOB".into())
    );
    let exact: Vec<(i64, f64)> = c
        .exec(
            "SELECT id, d FROM all_types WHERE d IS NOT NULL ORDER BY id",
            (),
        )
        .unwrap();
    for (id, d) in exact {
        let got: f64 = conn
            .query_row("SELECT d FROM all_types WHERE id = ?1", [id], |r| r.get(0))
            .unwrap();
        assert_eq!(got.to_bits(), d.to_bits(), "row {id}: the double itself");
    }
}

fn copy(
    db: &std::path::Path,
    url: &str,
    mo: &MysqlOptions,
) -> Result<liteload::Summary, liteload::Error> {
    import_mysql(db, url, mo, &ImportOptions::default(), &Progress::default())
}

#[test]
fn keys_indexes_queries_and_what_is_left_behind() {
    let my = MyServer::start();
    my.database(
        "k",
        "CREATE TABLE parent (id BIGINT PRIMARY KEY, code VARCHAR(10) NOT NULL, name VARCHAR(40),
           UNIQUE KEY uq_code (code), KEY ix_name_code (name, code), KEY ix_prefix (name(3)),
           FULLTEXT KEY ft (name)) ENGINE=InnoDB;
         CREATE TABLE child (a BIGINT, b VARCHAR(5), v INT, PRIMARY KEY (a, b),
           CONSTRAINT fk_p FOREIGN KEY (a) REFERENCES parent (id), CONSTRAINT ck_v CHECK (v > 0),
           CONSTRAINT ck_b CHECK (b <> 'zz'));
         CREATE TABLE part (pa BIGINT, pb VARCHAR(5), n INT,
           CONSTRAINT fk_two FOREIGN KEY (pa, pb) REFERENCES child (a, b));
         CREATE TABLE `odd ``name`` é` (`Col ``q``` INT);
         CREATE TABLE mem (x INT) ENGINE=MyISAM;
         CREATE TABLE defs (i INT DEFAULT -5, s VARCHAR(10) DEFAULT 'it''s', n VARCHAR(5) DEFAULT 'NULL',
           z INT DEFAULT NULL, d DOUBLE DEFAULT 1.5e3, bs VARCHAR(5) DEFAULT 'a\\\\b',
           ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP, e INT DEFAULT (1 + 2), dec1 DECIMAL(5,2) DEFAULT 1.50);
         CREATE VIEW pv AS SELECT id FROM parent;
         CREATE TRIGGER tg BEFORE INSERT ON child FOR EACH ROW SET NEW.v = NEW.v;
         CREATE FUNCTION f1() RETURNS INT DETERMINISTIC RETURN 1;
         INSERT INTO parent SELECT seq, CONCAT('c', seq), IF(seq % 3 = 0, NULL, CONCAT('n', seq % 50))
           FROM seq_1_to_20000;
         INSERT INTO child VALUES (1, 'x', 5), (1, 'y', 6), (2, 'x', 7);
         INSERT INTO part VALUES (1, 'y', 1), (2, 'x', 2);
         INSERT INTO `odd ``name`` é` VALUES (1), (NULL);
         INSERT INTO mem VALUES (9);",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("k.db");
    let mut mo = MysqlOptions::default();
    mo.connections = Some(4);
    let s = copy(&db, &my.socket_url("k"), &mo).unwrap();
    assert_eq!(s.rows, 20000 + 3 + 2 + 2 + 1, "{s:?}");
    let c = Connection::open(&db).unwrap();
    support::assert_intact(&c);
    let sql_of = |name: &str| -> String {
        c.query_row(
            "SELECT sql FROM sqlite_schema WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert!(
        sql_of("parent").contains("\"id\" INTEGER PRIMARY KEY"),
        "{}",
        sql_of("parent")
    );
    assert!(sql_of("uq_code").starts_with("CREATE UNIQUE INDEX"));
    assert!(sql_of("ix_name_code").contains("(\"name\", \"code\")"));
    let idx: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'child'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(idx, 1, "child's two-column key is a UNIQUE index");
    // A CHECK on numbers is declared (text compares by collation in MySQL: named).
    assert!(
        sql_of("child").contains("CONSTRAINT \"ck_v\" CHECK ((\"v\" > 0))"),
        "{}",
        sql_of("child")
    );
    assert!(!s.notes.iter().any(|n| n.contains("ck_v")), "{:?}", s.notes);
    // Pieces in key order, all rows, the same sums as the server's.
    let (n, sum, nulls): (i64, i64, i64) = c
        .query_row(
            "SELECT count(*), sum(id), count(*) - count(name) FROM parent",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((n, sum, nulls), (20000, 20000 * 20001 / 2, 6666));
    let odd: i64 = c
        .query_row(
            "SELECT count(\"Col `q`\") FROM \"odd `name` é\"",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(odd, 1);
    // Defaults SQLite stores as the copy stores the column are declared; the others named.
    c.execute("INSERT INTO defs DEFAULT VALUES", []).unwrap();
    let row: (i64, String, String, Option<i64>, f64) = c
        .query_row("SELECT i, s, n, z, d FROM defs", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap();
    assert_eq!(row, (-5, "it's".into(), "NULL".into(), None, 1500.0));
    let notes = s.notes.join("\n");
    for col in ["bs", "ts", "e", "dec1"] {
        assert!(
            notes.contains(&format!(
                "k.defs: the default of column \"{col}\" not carried"
            )),
            "{col}: {notes}"
        );
    }
    for said in [
        "index \"ix_prefix\" not copied (an index on a prefix",
        "index \"ft\" not copied (not a b-tree",
        "view k.pv not copied",
        "trigger tg on k.child",
        "function k.f1",
        "foreign key fk_p of k.child",
        "CHECK constraint ck_b of k.child not carried (`b` <> 'zz'",
        "k.mem: a MyISAM table has no snapshot",
    ] {
        assert!(notes.contains(said), "{said:?} not in {notes}");
    }
    // Some tables, and a query into a table of its own.
    let db2 = dir.path().join("some.db");
    let mut mo = MysqlOptions::default();
    mo.tables = vec!["child".into()];
    copy(&db2, &my.socket_url("k"), &mo).unwrap();
    let c2 = Connection::open(&db2).unwrap();
    let tables: Vec<String> = c2
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(tables, ["child"]);
    let db3 = dir.path().join("q.db");
    let mut mo = MysqlOptions::default();
    mo.query = Some("SELECT code, id * 2 AS twice FROM parent WHERE id <= 10".into());
    let mut opts = ImportOptions::default();
    opts.table = Some("top".into());
    import_mysql(&db3, &my.socket_url("k"), &mo, &opts, &Progress::default()).unwrap();
    let q: (i64, i64) = Connection::open(&db3)
        .unwrap()
        .query_row("SELECT count(*), sum(twice) FROM top", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(q, (10, 110));
    // Views as tables of their rows, foreign keys declared, an orphan named.
    let mut c = my.conn("k");
    c.query_drop("SET foreign_key_checks = 0").unwrap();
    c.query_drop("INSERT INTO child VALUES (99999, 'z', 1)")
        .unwrap();
    let db4 = dir.path().join("fk.db");
    let mut mo = MysqlOptions::default();
    mo.views = true;
    mo.foreign_keys = true;
    let s = copy(&db4, &my.socket_url("k"), &mo).unwrap();
    let c4 = Connection::open(&db4).unwrap();
    support::assert_intact(&c4);
    let child_sql: String = c4
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'child'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(child_sql.contains("REFERENCES \"parent\""), "{child_sql}");
    // A key of two columns to child's two-column primary key (a UNIQUE index here).
    let part_sql: String = c4
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'part'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        part_sql.contains("FOREIGN KEY (\"pa\", \"pb\") REFERENCES \"child\" (\"a\", \"b\")"),
        "{part_sql}"
    );
    let pv: i64 = c4
        .query_row("SELECT count(*) FROM pv", [], |r| r.get(0))
        .unwrap();
    assert_eq!(pv, 20000);
    let notes = s.notes.join("\n");
    for said in [
        "view k.pv copied as a table of its rows",
        "table \"child\": 1 row whose foreign key finds no parent",
    ] {
        assert!(notes.contains(said), "{said:?} not in {notes}");
    }
    assert!(!notes.contains("foreign key fk_p of k.child"), "{notes}");
    assert!(!notes.contains("fk_two"), "{notes}");
}

#[test]
fn one_snapshot_while_a_writer_runs() {
    let my = MyServer::start();
    my.database(
        "bank",
        "CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL);
         CREATE TABLE ledger (id INT AUTO_INCREMENT PRIMARY KEY, amt INT);
         CREATE TABLE total (n BIGINT);
         INSERT INTO acct SELECT seq, 1000 FROM seq_1_to_200000;
         INSERT INTO total VALUES (0);",
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let mut c = my.conn("bank");
        std::thread::spawn(move || {
            let mut rng = Rng(11);
            let mut done = 0u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                // Money moves between accounts far apart (different pieces), and every
                // ledger row is counted in `total`, each in one transaction.
                let a = 1 + rng.below(100_000);
                let b = 100_001 + rng.below(100_000);
                let amt = 1 + rng.below(50);
                c.query_drop(format!(
                    "START TRANSACTION; UPDATE acct SET bal = bal - {amt} WHERE id = {a};
                     UPDATE acct SET bal = bal + {amt} WHERE id = {b};
                     INSERT INTO ledger (amt) VALUES ({amt}); UPDATE total SET n = n + {amt}; COMMIT"
                ))
                .unwrap();
                done += 1;
            }
            done
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let db = dir.path().join(format!("bank{round}.db"));
        let mut mo = MysqlOptions::default();
        mo.connections = Some(4);
        mo.tables = vec!["acct".into(), "ledger".into(), "total".into()];
        let s = copy(&db, &my.tcp_url_with_password("bank"), &mo).unwrap();
        assert!(
            !s.notes.iter().any(|n| n.contains("one connection")),
            "{:?}",
            s.notes
        );
        let c = Connection::open(&db).unwrap();
        let (sum, n): (i64, i64) = c
            .query_row("SELECT sum(bal), count(*) FROM acct", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(
            (sum, n),
            (200_000_000, 200_000),
            "round {round}: money made or lost"
        );
        let (ledger, total): (i64, i64) = c
            .query_row(
                "SELECT (SELECT coalesce(sum(amt), 0) FROM ledger), (SELECT n FROM total)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            ledger, total,
            "round {round}: the tables seen at different moments"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(
        writer.join().unwrap() > 0,
        "the writer wrote during the copies"
    );
    let written: Option<i64> = my
        .conn("bank")
        .query_first("SELECT count(*) FROM ledger")
        .unwrap();
    assert!(
        written.unwrap() > 10,
        "the writer's transactions committed: {written:?}"
    );
}

#[test]
fn big_values_are_cut_into_batches_by_bytes_and_copied_whole() {
    let my = MyServer::start();
    my.database(
        "big",
        "CREATE TABLE blobs (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT) DEFAULT CHARSET=utf8mb4;
         INSERT INTO blobs SELECT seq, REPEAT(x'00ab', 1000000 + seq), REPEAT('é', 500000 + seq)
           FROM seq_1_to_24;",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("big.db");
    let mut mo = MysqlOptions::default();
    mo.connections = Some(2);
    let s = copy(&db, &my.socket_url("big"), &mo).unwrap();
    assert_eq!(s.rows, 24);
    let c = Connection::open(&db).unwrap();
    support::assert_intact(&c);
    let (blob, text, odd): (i64, i64, i64) = c
        .query_row(
            "SELECT sum(length(b)), sum(length(t)), count(*) FROM blobs \
             WHERE substr(b, 2, 1) <> x'ab' OR substr(t, 1, 1) <> 'é'",
            [],
            |r| Ok((r.get(0).unwrap_or(0), r.get(1).unwrap_or(0), r.get(2)?)),
        )
        .unwrap();
    assert_eq!(odd, 0, "{blob} {text}");
    let (blob, text): (i64, i64) = c
        .query_row(
            "SELECT sum(length(b)), sum(length(t)) FROM blobs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (blob, text),
        (2 * (24 * 1_000_000 + 300), 24 * 500_000 + 300)
    );
}

#[test]
fn a_user_who_may_not_lock_reads_on_one_connection() {
    let my = MyServer::start();
    my.database(
        "ro",
        "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t SELECT seq FROM seq_1_to_1000;",
    );
    my.root()
        .query_drop("CREATE USER reader@'%' IDENTIFIED BY 'r'; GRANT SELECT ON ro.* TO reader@'%'")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ro.db");
    let url = format!("mysql://reader:r@127.0.0.1:{}/ro", my.port);
    let s = copy(&db, &url, &MysqlOptions::default()).unwrap();
    assert_eq!(s.rows, 1000);
    assert!(
        s.notes.iter().any(|n| n.contains("read on one connection")),
        "{:?}",
        s.notes
    );
}

#[test]
fn failures_are_clear_and_leave_no_file() {
    let mut my = MyServer::start();
    my.database(
        "f",
        "CREATE TABLE big (id INT PRIMARY KEY, pad VARCHAR(200));
         INSERT INTO big SELECT seq, REPEAT('p', 200) FROM seq_1_to_300000;",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let no_file = |what: &str| {
        assert!(!db.exists(), "{what}: a file was left");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{what}: {left:?} left");
    };
    let wrong = format!("mysql://app:nope@127.0.0.1:{}/f?ssl-mode=DISABLED", my.port);
    let e = copy(&db, &wrong, &MysqlOptions::default()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Database { .. }), "{e}");
    assert!(e.to_string().contains("Access denied"), "{e}");
    assert!(
        !e.to_string().contains("nope"),
        "the password is not shown: {e}"
    );
    no_file("a wrong password");
    let mut mo = MysqlOptions::default();
    mo.tables = vec!["nothere".into()];
    let e = copy(&db, &my.socket_url("f"), &mo).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Usage(_)), "{e}");
    assert!(e.to_string().contains("no table \"nothere\""), "{e}");
    no_file("a missing table");
    let e = copy(&db, &my.socket_url("nodb"), &MysqlOptions::default()).unwrap_err();
    assert!(e.to_string().contains("nodb"), "{e}");
    no_file("a missing database");
    // A server killed mid-copy.
    let progress = std::sync::Arc::new(Progress::default());
    let url = my.socket_url("f");
    std::thread::scope(|s| {
        let load = {
            let (db, url, progress) = (db.clone(), url.clone(), progress.clone());
            s.spawn(move || {
                let mut mo = MysqlOptions::default();
                mo.connections = Some(2);
                import_mysql(&db, &url, &mo, &ImportOptions::default(), &progress)
            })
        };
        while progress.rows.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            assert!(
                !load.is_finished(),
                "the copy ended before the server was stopped"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        my.kill();
        let e = load.join().unwrap().unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Database { .. }), "{e}");
    });
    no_file("a server that died");
}

#[test]
fn ssl_mode_is_honored() {
    let my = MyServer::start_tls();
    my.database("tls", "CREATE TABLE t (x INT); INSERT INTO t VALUES (1);");
    let dir = tempfile::tempdir().unwrap();
    // What the copy's own connection says of itself: its cipher, empty when plain.
    let mut mo = MysqlOptions::default();
    mo.query = Some(
        "SELECT VARIABLE_VALUE AS c FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'"
            .into(),
    );
    let mut opts = ImportOptions::default();
    opts.table = Some("s".into());
    let pw = support::mysql::PASSWORD.replace(' ', "%20");
    let url =
        |host: &str, params: &str| format!("mysql://app:{pw}@{host}:{}/tls?{params}", my.port);
    let cipher_of = |url: &str| -> Result<String, liteload::Error> {
        let db = dir.path().join("ssl.db");
        let _ = std::fs::remove_file(&db);
        import_mysql(&db, url, &mo, &opts, &Progress::default())?;
        let c = Connection::open(&db).unwrap();
        Ok(c.query_row("SELECT c FROM s", [], |r| r.get(0)).unwrap())
    };
    let ca = my.ca_pem().display().to_string();
    let other = my.other_ca_pem().display().to_string();
    assert_eq!(
        cipher_of(&url("127.0.0.1", "ssl-mode=DISABLED")).unwrap(),
        ""
    );
    assert_ne!(
        cipher_of(&url("127.0.0.1", "ssl-mode=PREFERRED")).unwrap(),
        ""
    );
    assert_ne!(
        cipher_of(&url("127.0.0.1", "")).unwrap(),
        "",
        "PREFERRED is the default"
    );
    assert_ne!(
        cipher_of(&url("127.0.0.1", "ssl-mode=REQUIRED")).unwrap(),
        ""
    );
    assert_ne!(
        cipher_of(&url(
            "127.0.0.1",
            &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}")
        ))
        .unwrap(),
        ""
    );
    assert_ne!(
        cipher_of(&url(
            "127.0.0.1",
            &format!("ssl-mode=VERIFY_CA&ssl-ca={ca}")
        ))
        .unwrap(),
        ""
    );
    for refused in [
        url("127.0.0.1", &format!("ssl-mode=VERIFY_CA&ssl-ca={other}")),
        url("127.0.0.1", "ssl-mode=VERIFY_IDENTITY"),
    ] {
        let e = cipher_of(&refused).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Database { .. }),
            "{refused}: {e}"
        );
        assert!(!dir.path().join("ssl.db").exists());
    }
    // REQUIRED against a server without TLS is refused; PREFERRED falls back.
    let plain = MyServer::start();
    plain.database("tls", "CREATE TABLE t (x INT);");
    let purl = |params: &str| format!("mysql://app:{pw}@127.0.0.1:{}/tls?{params}", plain.port);
    assert_eq!(cipher_of(&purl("ssl-mode=PREFERRED")).unwrap(), "");
    let e = cipher_of(&purl("ssl-mode=REQUIRED")).unwrap_err();
    assert!(e.to_string().contains("does not offer TLS"), "{e}");
}

/// CHECK constraints the copy declares, tried row by row against the server's own: a
/// row one accepts the other accepts, a row one refuses the other refuses; those SQLite
/// would evaluate otherwise (text, FLOAT, division) are named instead.
#[test]
fn carried_check_constraints_accept_and_refuse_the_rows_the_server_does() {
    let my = MyServer::start();
    let carried = [
        "age >= 0",
        "age > -2 AND qty < 10",
        "qty * 2 + age <> 7",
        "age IN (0, 1, 2, 3, 5, 7, 9) OR age IS NULL",
        "NOT (age = qty)",
        "-age < 3",
        "qty - age >= -2",
        "d * 2 < 3.5 OR d IS NULL",
    ];
    let named = ["name <> 'x'", "age DIV 2 < 4", "f > 0.1", "age / 2 < 4"];
    let columns = "id INT PRIMARY KEY, age INT, qty BIGINT, d DOUBLE, f FLOAT, name VARCHAR(10)";
    let ddl = support::check_tables(columns, &carried, &named);
    my.database("checks", &ddl);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let s = copy(&db, &my.socket_url("checks"), &MysqlOptions::default()).unwrap();
    for i in 0..carried.len() + named.len() {
        let noted = s
            .notes
            .iter()
            .any(|n| n.contains(&format!("CHECK constraint c{i:02} of checks.t not carried")));
        assert_eq!(noted, i >= carried.len(), "c{i:02}: {:#?}", s.notes);
    }
    let lite = Connection::open(&db).unwrap();
    let mut server = my.conn("checks");
    let ages = support::AGES;
    let qtys = support::QTYS;
    let ds = [None, Some(0.5f64), Some(1.7), Some(1.75), Some(2.0)];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    support::same_verdicts(400, |id| {
        let id = id as i64;
        let (age, qty, d) = (
            ages[rng.below(ages.len())],
            qtys[rng.below(qtys.len())],
            ds[rng.below(ds.len())],
        );
        let on_server = server
            .exec_drop(
                "INSERT INTO r (id, age, qty, d) VALUES (?, ?, ?, ?)",
                (id, age, qty, d),
            )
            .is_ok();
        let in_lite = lite.execute(
            "INSERT INTO r (id, age, qty, d) VALUES (?1, ?2, ?3, ?4)",
            liteload::rusqlite::params![id, age, qty, d],
        );
        (on_server, in_lite, format!("{age:?} {qty:?} {d:?}"))
    });
}
