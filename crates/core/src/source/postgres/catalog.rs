//! What is copied, read from PostgreSQL's catalog inside the copy's snapshot: the base
//! tables of a schema (or a query's result columns), each column's kind and the
//! expression that selects it, the key that becomes an INTEGER PRIMARY KEY, and the
//! indexes the page writer rebuilds.

use postgres::Client;

use super::connect::Server;
use super::decode::Kind;
use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::table::{ForeignKey, IndexSpec};

/// A column as it is copied.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    /// The name in SQLite (PostgreSQL's, made distinct ignoring ASCII case).
    pub(crate) name: String,
    /// The name in PostgreSQL (a query's column: its result's name).
    pub(crate) pg_name: String,
    /// Its type as PostgreSQL prints it (`character(5)`; empty for a query's column).
    pub(crate) pg_type: String,
    pub(crate) kind: Kind,
    /// What the copy selects: the column, or its text on the server (`col::text`,
    /// `array_to_json(col)::text`).
    pub(crate) select: String,
}

/// A table (or a query) to copy.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    /// Its name in SQLite.
    pub(crate) name: String,
    /// What the copy reads from: `"schema"."table"`, or `(query) q`.
    pub(crate) from: String,
    /// Shown in messages: `schema.table` or `query`.
    pub(crate) shown: String,
    pub(crate) columns: Vec<Column>,
    /// The one-column integer primary key (an index into `columns`).
    pub(crate) rowid: Option<usize>,
    pub(crate) indexes: Vec<IndexSpec>,
    /// Blocks of the table's heap at the snapshot (0 for a partitioned table or a query).
    pub(crate) blocks: i64,
    /// Whether block ranges (`ctid`) can cut it.
    pub(crate) by_blocks: bool,
    /// Whether the planner's statistics say its heap is in the order of its integer
    /// primary key (`pg_stats.correlation` of 1): then it is read in block order, which
    /// costs the server less than key order, and the reader checks that the keys do
    /// come in order (see [`super::copy::CopyReader`]).
    pub(crate) heap_in_key_order: bool,
}

/// Built-in type OIDs (stable across PostgreSQL releases).
mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const JSON: u32 = 114;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const CIDR: u32 = 650;
    pub const MONEY: u32 = 790;
    pub const INET: u32 = 869;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIME: u32 = 1083;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const TIMESTAMPTZ_ARRAY: u32 = 1185;
    pub const INTERVAL: u32 = 1186;
    pub const NUMERIC: u32 = 1700;
    pub const UUID: u32 = 2950;
    pub const JSONB: u32 = 3802;
}

/// SQL for the base type of the type `t` (a `pg_type` row): through domains over
/// domains, at any depth, to the first type that is no domain.
const BASE_OF_T: &str = "(WITH RECURSIVE d(o) AS (SELECT t.oid UNION ALL \
     SELECT p.typbasetype FROM pg_type p JOIN d ON p.oid = d.o WHERE p.typtype = 'd') \
     SELECT d.o FROM d JOIN pg_type p ON p.oid = d.o WHERE p.typtype <> 'd')";

/// A column's type as the catalog gives it: its base type (through a domain), that
/// type's `typtype` and `typcategory`, and its name as PostgreSQL prints it.
struct TypeInfo {
    base: u32,
    typtype: String,
    category: String,
    shown: String,
}

/// The kind of a column of type `t` and the expression that selects `col`, with a note
/// when the column is stored as the server's text of a type the mapping does not name.
fn column_kind(t: &TypeInfo, col: &str, decimals_real: bool) -> (Kind, String, Option<String>) {
    let direct = match t.base {
        oid::BOOL => Some(Kind::Bool),
        oid::INT2 | oid::INT4 | oid::INT8 => Some(Kind::Int),
        oid::FLOAT4 => Some(Kind::Float4),
        oid::FLOAT8 => Some(Kind::Float8),
        oid::TEXT | oid::VARCHAR | oid::BPCHAR | oid::NAME | oid::JSON => Some(Kind::Text),
        oid::JSONB => Some(Kind::Jsonb),
        oid::BYTEA => Some(Kind::Bytes),
        oid::UUID => Some(Kind::Uuid),
        oid::DATE => Some(Kind::Date),
        oid::TIME => Some(Kind::Time),
        oid::TIMESTAMP => Some(Kind::Timestamp),
        oid::TIMESTAMPTZ => Some(Kind::TimestampTz),
        oid::NUMERIC => Some(Kind::Numeric {
            real: decimals_real,
        }),
        _ => None,
    };
    if let Some(kind) = direct {
        return (kind, col.to_string(), None);
    }
    if t.base == oid::OID {
        // Unsigned 32 bits: read as a bigint.
        return (Kind::Int, format!("{col}::int8"), None);
    }
    if t.base == oid::TIMESTAMPTZ_ARRAY {
        // Each element as a timestamptz column's value is: the instant in UTC with `Z`
        // and six digits of fraction when there is one (array_to_json would print the
        // session's offset). Arrays of more than one dimension keep array_to_json's
        // text, the copy's sessions being in UTC.
        let element = "CASE WHEN e IS NULL THEN NULL WHEN NOT isfinite(e) THEN e::text \
             ELSE to_char(e AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') \
             || CASE WHEN to_char(e, 'US') = '000000' THEN '' ELSE '.' || to_char(e, 'US') END \
             || 'Z' || CASE WHEN to_char(e AT TIME ZONE 'UTC', 'BC') = 'BC' THEN ' BC' ELSE '' END END";
        return (
            Kind::Text,
            format!(
                "CASE WHEN {col} IS NULL THEN NULL WHEN array_ndims({col}) > 1 THEN array_to_json({col})::text \
                 ELSE coalesce((SELECT array_to_json(array_agg({element} ORDER BY i))::text \
                 FROM unnest({col}) WITH ORDINALITY u(e, i)), '[]') END"
            ),
            None,
        );
    }
    if t.category == "A" {
        return (Kind::Text, format!("array_to_json({col})::text"), None);
    }
    let named =
        t.typtype == "e" || matches!(t.base, oid::INET | oid::CIDR | oid::INTERVAL | oid::MONEY);
    let note = (!named).then(|| format!("stored as PostgreSQL's text of type {}", t.shown));
    // format('%s') prints through the type's output function, as PostgreSQL shows a
    // value (a cast to text may differ: inet's keeps a host's /32 or /128). A value is
    // NULL by its own NULL-ness (num_nulls), not by SQL's IS NULL, which a composite
    // whose fields are all NULL, ROW(NULL, NULL), also passes.
    (
        Kind::Text,
        format!("CASE WHEN num_nulls({col}) = 1 THEN NULL ELSE format('%s', {col}) END"),
        note,
    )
}

/// The base tables of `schema` (those named in `only`, when it names any), in name
/// order, as `server`'s catalog shows them through `client` (inside the snapshot).
/// Notes go to `notes`.
pub(crate) fn tables(
    client: &mut Client,
    server: &Server,
    schema: &str,
    only: &[String],
    views: bool,
    decimals_real: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Table>> {
    let q = |e: postgres::Error| server.error("reading the catalog", &e);
    // Base and partitioned tables; with `views`, views and materialized views too,
    // each copied as a table of its rows.
    let rows = client
        .query(
            "SELECT c.oid, c.relname::text, c.relkind = 'p', \
             (pg_relation_size(c.oid) / current_setting('block_size')::int8)::int8, \
             c.relkind::text, CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND NOT c.relispartition \
             AND (c.relkind IN ('r', 'p') OR ($2 AND c.relkind IN ('v', 'm'))) \
             ORDER BY c.relname",
            &[&schema, &views],
        )
        .map_err(q)?;
    let mut view_sql: std::collections::HashMap<String, (String, String)> = rows
        .iter()
        .filter_map(|r| {
            let sql: Option<String> = r.get(5);
            sql.map(|s| (r.get::<_, String>(1), (r.get::<_, String>(4), s)))
        })
        .collect();
    let mut found: Vec<(u32, String, bool, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    if !only.is_empty() {
        for name in only {
            if !found.iter().any(|(_, n, _, _)| n == name) {
                let listed: Vec<&str> = found.iter().map(|(_, n, _, _)| n.as_str()).collect();
                return Err(Error::usage(format!(
                    "{}: schema {schema:?} has no table {name:?} (tables: {})",
                    server.shown,
                    if listed.is_empty() {
                        "none".into()
                    } else {
                        listed.join(", ")
                    }
                )));
            }
        }
        found.retain(|(_, n, _, _)| only.contains(n));
    }
    if found.is_empty() {
        return Err(Error::usage(format!(
            "{}: schema {schema:?} has no tables to copy",
            server.shown
        )));
    }
    let mut out: Vec<Table> = vec![];
    for (rel, pg_name, partitioned, blocks) in found {
        let shown = format!("{schema}.{pg_name}");
        // A view is read whole, by a query: it has no heap to cut, no ONLY.
        let view = view_sql.remove(&pg_name);
        if let Some((kind, sql)) = &view {
            notes.push(format!(
                "{shown}: {} copied as a table of its rows; its SQL (PostgreSQL's, not \
                 SQLite's): {}",
                if kind == "m" {
                    "materialized view"
                } else {
                    "view"
                },
                sql.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
        let type_rows = client
            .query(
                &format!(
                    "SELECT a.attname::text, a.attnum, b.oid, b.typtype::text, b.typcategory::text, \
                     format_type(a.atttypid, a.atttypmod) \
                     FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
                     JOIN pg_type b ON b.oid = {BASE_OF_T} \
                     WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
                ),
                &[&rel],
            )
            .map_err(q)?;
        let raw: Vec<String> = type_rows.iter().map(|r| r.get(0)).collect();
        let attnums: Vec<i16> = type_rows.iter().map(|r| r.get(1)).collect();
        let (names, renamed) = crate::schema::clean_names(&raw);
        notes.extend(renamed.into_iter().map(|n| format!("{shown}: {n}")));
        let mut columns = vec![];
        for (r, name) in type_rows.iter().zip(&names) {
            let t = TypeInfo {
                base: r.get(2),
                typtype: r.get(3),
                category: r.get(4),
                shown: r.get(5),
            };
            let pg_col: String = r.get(0);
            let pg_type = t.shown.clone();
            let (kind, select, note) = column_kind(&t, &quote_ident(&pg_col), decimals_real);
            if let Some(n) = note {
                notes.push(format!("{shown}: column {pg_col:?} {n}"));
            }
            columns.push(Column {
                name: name.clone(),
                pg_name: pg_col,
                pg_type,
                kind,
                select,
            });
        }
        if columns.is_empty() {
            notes.push(format!("{shown}: skipped, it has no columns"));
            continue;
        }
        let (rowid, indexes) = match &view {
            Some(_) => (None, vec![]),
            None => keys(client, server, rel, &attnums, &columns, &shown, notes)?,
        };
        let heap_in_key_order = match rowid {
            Some(k) => {
                let key: String = type_rows[k].get(0);
                let corr: Option<f32> = client
                    .query_opt(
                        "SELECT correlation FROM pg_stats \
                         WHERE schemaname = $1 AND tablename = $2 AND attname = $3",
                        &[&schema, &pg_name, &key],
                    )
                    .map_err(q)?
                    .and_then(|r| r.get(0));
                corr == Some(1.0)
            }
            None => false,
        };
        // Two PostgreSQL tables whose names differ only in case would be one in SQLite.
        let mut name = pg_name.clone();
        let mut n = 2;
        while out.iter().any(|t| t.name.eq_ignore_ascii_case(&name)) {
            name = format!("{pg_name}_{n}");
            n += 1;
        }
        if name != pg_name {
            notes.push(format!(
                "{shown}: loaded as table {name:?} (another table has its name but for case)"
            ));
        }
        out.push(Table {
            name,
            // An inheritance parent's own rows (as pg_dump reads it): its children are
            // tables of their own. A partitioned table is read whole, its partitions
            // not again (they are not listed).
            from: format!(
                "{}{}.{}",
                if partitioned || view.is_some() {
                    ""
                } else {
                    "ONLY "
                },
                quote_ident(schema),
                quote_ident(&pg_name)
            ),
            shown,
            columns,
            rowid,
            indexes,
            blocks,
            by_blocks: !partitioned && view.is_none(),
            heap_in_key_order,
        });
    }
    Ok(out)
}

/// The foreign keys of the copied `tables` (of `schema`) that SQLite can declare: one
/// column or several, referencing a copied table's INTEGER PRIMARY KEY or exactly the
/// columns of one of its UNIQUE indexes ([`crate::table::is_parent_key`]); for each
/// table (in `tables`' order) its keys, as SQLite names them. Every other foreign key of theirs is named in `notes` with why and its
/// definition. Each key is added to `carried` (`constraint table.name`, PostgreSQL's),
/// so that [`not_copied`] does not name it again.
pub(crate) fn foreign_keys(
    client: &mut Client,
    server: &Server,
    schema: &str,
    tables: &[Table],
    carried: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Vec<Vec<ForeignKey>>> {
    let pg_name = |t: &Table| t.shown[schema.len() + 1..].to_string();
    let names: Vec<String> = tables.iter().map(pg_name).collect();
    // Each key's columns and the parent's, in the key's order.
    let rows = client
        .query(
            "SELECT c.relname::text, k.conname::text, fns.nspname::text, f.relname::text, \
             ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, i) \
                   JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i), \
             ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, i) \
                   JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i), \
             pg_get_constraintdef(k.oid) \
             FROM pg_constraint k \
             JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_class f ON f.oid = k.confrelid JOIN pg_namespace fns ON fns.oid = f.relnamespace \
             WHERE n.nspname = $1 AND c.relname = ANY($2) AND k.contype = 'f' \
             ORDER BY c.relname, k.conname",
            &[&schema, &names],
        )
        .map_err(|e| server.error("reading the catalog", &e))?;
    let mut out = vec![vec![]; tables.len()];
    for r in rows {
        let (table, name, ref_schema, ref_table): (String, String, String, String) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        let (columns, keys, def): (Vec<String>, Vec<String>, String) =
            (r.get(4), r.get(5), r.get(6));
        let Some(from) = names.iter().position(|n| *n == table) else {
            continue;
        };
        let to = names
            .iter()
            .position(|n| *n == ref_table)
            .filter(|_| ref_schema == schema);
        // The columns by their names in SQLite, where all are copied.
        let here = |t: &Table, of: &[String]| -> Option<Vec<String>> {
            of.iter()
                .map(|pg| {
                    t.columns
                        .iter()
                        .find(|c| c.pg_name == *pg)
                        .map(|c| c.name.clone())
                })
                .collect()
        };
        let parent = to.map(|to| {
            let p = &tables[to];
            let rowid = p.rowid.map(|k| p.columns[k].name.as_str());
            (p.name.as_str(), rowid, p.indexes.as_slice(), here(p, &keys))
        });
        let declared = crate::table::foreign_key(
            here(&tables[from], &columns),
            parent,
            &format!("{ref_schema}.{ref_table}"),
            &keys,
        );
        match declared {
            Ok(fk) => out[from].push(fk),
            Err(why) => notes.push(format!(
                "{schema}.{table}: foreign key {name:?} not declared ({why}): {def}"
            )),
        }
        carried.push(format!("constraint {table}.{name}"));
    }
    Ok(out)
}

/// The column defaults of the copied `tables` (of `schema`) that SQLite can declare:
/// a constant (a number, a string, true or false, as `pg_get_expr` prints it, a cast
/// after it) that SQLite stores as the copy stores the column's values; for each table
/// (in `tables`' order) its defaults by SQLite's column names. The names of those
/// declared are added to `carried` (`default table.column`, PostgreSQL's); the others
/// are left to [`not_copied`], which names them.
pub(crate) fn defaults(
    client: &mut Client,
    server: &Server,
    schema: &str,
    tables: &[Table],
    carried: &mut Vec<String>,
) -> Result<Vec<Vec<(String, String)>>> {
    let rows = per_table(
        client,
        server,
        "SELECT c.relname::text, a.attname::text, pg_get_expr(d.adbin, d.adrelid) \
         FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid \
         JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = $1 AND c.relname = ANY($2) AND a.attgenerated = '' \
         ORDER BY c.relname, a.attnum",
        schema,
        tables,
    )?;
    let mut out = vec![vec![]; tables.len()];
    for (t, table, column, expr) in rows {
        let Some(c) = tables[t].columns.iter().find(|c| c.pg_name == column) else {
            continue;
        };
        // A text column copied as the server's text of another type (an array as JSON,
        // say) stores other text than its default's, and char(n) pads it.
        let plain = c.select == quote_ident(&column) && !c.pg_type.starts_with("character(");
        if let Some(sql) = sqlite_default(&expr, c.kind, plain) {
            out[t].push((c.name.clone(), sql));
            carried.push(format!("default {table}.{column}"));
        }
    }
    Ok(out)
}

/// The rows of `sql` (a catalog query of three texts, the first a table's name, taking
/// `schema` and the names of the copied `tables` as `$1` and `$2`) that are about one
/// of `tables`: its place in `tables`, its name, and the other two texts.
fn per_table(
    client: &mut Client,
    server: &Server,
    sql: &str,
    schema: &str,
    tables: &[Table],
) -> Result<Vec<(usize, String, String, String)>> {
    let names: Vec<String> = tables
        .iter()
        .map(|t| t.shown[schema.len() + 1..].to_string())
        .collect();
    let rows = client
        .query(sql, &[&schema, &names])
        .map_err(|e| server.error("reading the catalog", &e))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let table: String = r.get(0);
            let t = names.iter().position(|n| *n == table)?;
            Some((t, table, r.get(1), r.get(2)))
        })
        .collect())
}

/// The CHECK constraints of the copied `tables` (of `schema`) that SQLite evaluates as
/// PostgreSQL does on the values the copy stores (see [`crate::source::checks`]): for each table
/// (in `tables`' order) each constraint's name and SQLite's expression. The names of
/// those declared are added to `carried` (`constraint table.name`, PostgreSQL's); the
/// others are left to [`not_copied`], which names them.
pub(crate) fn checks(
    client: &mut Client,
    server: &Server,
    schema: &str,
    tables: &[Table],
    carried: &mut Vec<String>,
) -> Result<Vec<Vec<(String, String)>>> {
    use crate::source::checks::{to_sqlite, Class, Dialect};
    let rows = per_table(
        client,
        server,
        "SELECT c.relname::text, k.conname::text, pg_get_constraintdef(k.oid) \
         FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = $1 AND c.relname = ANY($2) AND k.contype = 'c' \
         ORDER BY c.relname, k.conname",
        schema,
        tables,
    )?;
    let mut out = vec![vec![]; tables.len()];
    for (t, table, name, def) in rows {
        let column = |pg: &str| {
            let c = tables[t].columns.iter().find(|c| c.pg_name == pg)?;
            let class = match c.kind {
                Kind::Int | Kind::Float4 | Kind::Float8 => Class::Number,
                // Text copied as it is: not char(n), which pads, nor another type's text.
                Kind::Text
                    if c.select == quote_ident(pg) && !c.pg_type.starts_with("character(") =>
                {
                    Class::Text
                }
                _ => return None,
            };
            Some((c.name.clone(), class))
        };
        if let Some(expr) = to_sqlite(&def, Dialect::Postgres, &column) {
            out[t].push((name.clone(), expr));
            carried.push(format!("constraint {table}.{name}"));
        }
    }
    Ok(out)
}

/// SQLite's literal for the PostgreSQL default `expr` of a column of `kind` (`plain`:
/// a text column copied as it is), or `None` where SQLite would not store what the
/// copy stores for that value: anything but a constant, a real that is not finite, a
/// string default of a column whose text the copy writes otherwise.
fn sqlite_default(expr: &str, kind: Kind, plain: bool) -> Option<String> {
    let mut e = expr.trim();
    while e.len() >= 2 && e.starts_with('(') && e.ends_with(')') {
        e = e[1..e.len() - 1].trim();
    }
    // A quoted string, its quotes doubled inside, and a cast after it.
    let (text, quoted) = if let Some(rest) = e.strip_prefix('\'') {
        let mut value = String::new();
        let mut chars = rest.char_indices().peekable();
        let mut end = None;
        while let Some((i, ch)) = chars.next() {
            if ch == '\'' {
                if chars.peek().is_some_and(|&(_, n)| n == '\'') {
                    chars.next();
                    value.push('\'');
                    continue;
                }
                end = Some(i + 1);
                break;
            }
            value.push(ch);
        }
        let after = rest[end?..].trim();
        let cast_ok = after.is_empty()
            || after.strip_prefix("::").is_some_and(|t| {
                !t.is_empty()
                    && t.chars().all(|c| {
                        c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '"' | '(' | ')' | ',')
                    })
            });
        if !cast_ok {
            return None;
        }
        (value, true)
    } else {
        (e.to_string(), false)
    };
    let number = |s: &str| {
        let s = s.trim();
        let digits = s.strip_prefix('-').unwrap_or(s);
        (!digits.is_empty()
            && digits
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
            && digits.starts_with(|c: char| c.is_ascii_digit())
            && s.parse::<f64>().is_ok_and(f64::is_finite))
        .then(|| s.to_string())
    };
    let literal = |s: &str| format!("'{}'", s.replace('\'', "''"));
    match kind {
        Kind::Bool => match (text.as_str(), quoted) {
            ("true", false) => Some("1".into()),
            ("false", false) => Some("0".into()),
            _ => None,
        },
        Kind::Int => number(&text).filter(|n| n.parse::<i64>().is_ok()),
        Kind::Float4 | Kind::Float8 | Kind::Numeric { real: true } => number(&text),
        Kind::Text if plain && quoted => Some(literal(&text)),
        _ => None,
    }
}

/// Notes for every object of `schema` that the copy of `tables` (their PostgreSQL
/// names) leaves behind, and why: views and materialized views (unless copied as
/// tables), sequences, foreign tables, functions and procedures; and of the copied
/// tables, their foreign keys, CHECK constraints, column defaults and triggers, which
/// the copy does not carry (each with PostgreSQL's own text of it).
pub(crate) fn not_copied(
    client: &mut Client,
    server: &Server,
    schema: &str,
    tables: &[String],
    views: bool,
    carried: &[String],
    notes: &mut Vec<String>,
) -> Result<()> {
    let q = |e: postgres::Error| server.error("reading the catalog", &e);
    let rows = client
        .query(
            "SELECT c.relname::text, c.relkind::text FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('v', 'm', 'S', 'f') ORDER BY c.relname",
            &[&schema],
        )
        .map_err(q)?;
    for r in rows {
        let (name, kind): (String, String) = (r.get(0), r.get(1));
        let what = match kind.as_str() {
            "v" | "m" if views => continue,
            "v" => "view not copied (views copies it as a table of its rows)",
            "m" => "materialized view not copied (views copies it as a table of its rows)",
            "S" => "sequence not copied (the values it gave are copied as data)",
            _ => "foreign table not copied (its rows live on another server)",
        };
        notes.push(format!("{schema}.{name}: {what}"));
    }
    let rows = client
        .query(
            "SELECT p.proname::text, p.prokind::text FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = $1 ORDER BY p.proname",
            &[&schema],
        )
        .map_err(q)?;
    for r in rows {
        let (name, kind): (String, String) = (r.get(0), r.get(1));
        let what = match kind.as_str() {
            "p" => "procedure",
            "a" => "aggregate",
            "w" => "window function",
            _ => "function",
        };
        notes.push(format!(
            "{schema}.{name}: {what} not copied (SQLite runs no PostgreSQL code)"
        ));
    }
    let rows = client
        .query(
            "SELECT c.relname::text, k.conname::text, k.contype::text, pg_get_constraintdef(k.oid) \
             FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = ANY($2) AND k.contype IN ('f', 'c') \
             ORDER BY c.relname, k.conname",
            &[&schema, &tables],
        )
        .map_err(q)?;
    for r in rows {
        let (table, name, kind, def): (String, String, String, String) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        if carried.contains(&format!("constraint {table}.{name}")) {
            continue;
        }
        let what = match kind.as_str() {
            "f" => "foreign key",
            _ => "CHECK constraint",
        };
        notes.push(format!(
            "{schema}.{table}: {what} {name:?} not carried: {def}"
        ));
    }
    let rows = client
        .query(
            "SELECT c.relname::text, a.attname::text, pg_get_expr(d.adbin, d.adrelid), a.attgenerated::text \
             FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid \
             JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = ANY($2) ORDER BY c.relname, a.attnum",
            &[&schema, &tables],
        )
        .map_err(q)?;
    for r in rows {
        let (table, column, expr, generated): (String, String, String, String) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        if carried.contains(&format!("default {table}.{column}")) {
            continue;
        }
        let what = match generated.as_str() {
            "" => "default",
            _ => "generation expression (its values are copied as data)",
        };
        notes.push(format!(
            "{schema}.{table}: column {column:?}'s {what} not carried: {expr}"
        ));
    }
    let rows = client
        .query(
            "SELECT c.relname::text, t.tgname::text FROM pg_trigger t \
             JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = ANY($2) AND NOT t.tgisinternal \
             ORDER BY c.relname, t.tgname",
            &[&schema, &tables],
        )
        .map_err(q)?;
    for r in rows {
        let (table, name): (String, String) = (r.get(0), r.get(1));
        notes.push(format!("{schema}.{table}: trigger {name:?} not copied"));
    }
    Ok(())
}

/// The integer primary key (as a column index) and the indexes of table `rel`, whose
/// columns (by `attnums`) are `columns`. Indexes SQLite cannot have as they are
/// (expressions, partial, not b-tree) are noted and skipped.
fn keys(
    client: &mut Client,
    server: &Server,
    rel: u32,
    attnums: &[i16],
    columns: &[Column],
    shown: &str,
    notes: &mut Vec<String>,
) -> Result<(Option<usize>, Vec<IndexSpec>)> {
    let rows = client
        .query(
            "SELECT c.relname::text, i.indisunique, i.indisprimary, \
             i.indexprs IS NOT NULL OR i.indpred IS NOT NULL, am.amname::text, \
             i.indnkeyatts::int4, i.indkey::int2[] \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_am am ON am.oid = c.relam \
             WHERE i.indrelid = $1 ORDER BY i.indisprimary DESC, c.relname",
            &[&rel],
        )
        .map_err(|e| server.error("reading the catalog", &e))?;
    let mut rowid = None;
    let mut specs: Vec<IndexSpec> = vec![];
    for r in rows {
        let name: String = r.get(0);
        let (unique, primary, partial): (bool, bool, bool) = (r.get(1), r.get(2), r.get(3));
        let method: String = r.get(4);
        let nkeys = usize::try_from(r.get::<_, i32>(5)).unwrap_or(0);
        let key: Vec<i16> = r.get(6);
        if partial || method != "btree" {
            let why = if partial {
                "an expression or partial index"
            } else {
                "not a b-tree index"
            };
            notes.push(format!("{shown}: index {name:?} skipped ({why})"));
            continue;
        }
        let cols: Option<Vec<usize>> = key
            .iter()
            .take(nkeys)
            .map(|a| attnums.iter().position(|x| x == a))
            .collect();
        let Some(cols) = cols.filter(|c| !c.is_empty()) else {
            notes.push(format!(
                "{shown}: index {name:?} skipped (an expression index)"
            ));
            continue;
        };
        if primary && rowid.is_none() && cols.len() == 1 && columns[cols[0]].kind == Kind::Int {
            rowid = Some(cols[0]);
            continue;
        }
        let names: Vec<String> = cols.iter().map(|&c| columns[c].name.clone()).collect();
        let same = |s: &IndexSpec| {
            s.columns.len() == names.len()
                && s.columns
                    .iter()
                    .zip(&names)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
        };
        if let Some(existing) = specs.iter_mut().find(|s| same(s)) {
            existing.unique |= unique;
            continue;
        }
        specs.push(IndexSpec {
            columns: names,
            unique,
            // The source's own name, kept where the file has it free.
            name: Some(name),
        });
    }
    Ok((rowid, specs))
}

/// The result columns of `query` as a table named `name`, read from `(query) q`.
pub(crate) fn query(
    client: &mut Client,
    server: &Server,
    sql: &str,
    name: &str,
    decimals_real: bool,
    notes: &mut Vec<String>,
) -> Result<Table> {
    let stmt = client
        .prepare(sql)
        .map_err(|e| server.error("preparing the query", &e))?;
    if stmt.columns().is_empty() {
        return Err(Error::usage("the query returns no columns"));
    }
    let raw: Vec<String> = stmt
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    // Columns are named apart (`id`, `id_2` for a join's two ids), and the query's rows
    // are read through those names: `(query) q("id", "id_2", …)`.
    let (names, renamed) = crate::schema::clean_names(&raw);
    notes.extend(renamed.into_iter().map(|n| format!("query: {n}")));
    let aliases: Vec<String> = names.iter().map(|n| quote_ident(n)).collect();
    let mut columns = vec![];
    for (c, name) in stmt.columns().iter().zip(names) {
        let row = client
            .query_one(
                &format!(
                    "SELECT b.oid, b.typtype::text, b.typcategory::text, format_type($1::oid, NULL) \
                     FROM pg_type t JOIN pg_type b ON b.oid = {BASE_OF_T} \
                     WHERE t.oid = $1::oid"
                ),
                &[&c.type_().oid()],
            )
            .map_err(|e| server.error("reading the catalog", &e))?;
        let t = TypeInfo {
            base: row.get(0),
            typtype: row.get(1),
            category: row.get(2),
            shown: row.get(3),
        };
        let (kind, select, note) =
            column_kind(&t, &format!("q.{}", quote_ident(&name)), decimals_real);
        if let Some(n) = note {
            notes.push(format!("query: column {:?} {n}", c.name()));
        }
        columns.push(Column {
            pg_name: c.name().to_string(),
            pg_type: String::new(),
            name,
            kind,
            select,
        });
    }
    Ok(Table {
        name: name.to_string(),
        // On lines of their own: a query may end in a `--` comment.
        from: format!("(\n{}\n) q({})", query_body(sql), aliases.join(", ")),
        shown: "query".into(),
        columns,
        rowid: None,
        indexes: vec![],
        blocks: 0,
        by_blocks: false,
        heap_in_key_order: false,
    })
}

/// `sql` without what may follow its last token (`;`, whitespace, comments), which a
/// query wrapped as a subquery cannot have; what psql runs as one statement.
fn query_body(sql: &str) -> &str {
    let b = sql.as_bytes();
    let (mut i, mut end) = (0, 0);
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"--") {
            i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |k| i + k + 1);
            continue;
        }
        if b[i..].starts_with(b"/*") {
            // Comments nest in PostgreSQL.
            let mut depth = 0usize;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            continue;
        }
        match c {
            b'\'' | b'"' => {
                // A quoted literal or name ('' and "" inside are the quote itself).
                i += 1;
                while i < b.len() {
                    if b[i] == c {
                        if b.get(i + 1) == Some(&c) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
                end = i.min(b.len());
            }
            b'$' => {
                // A dollar quote ($$ or $tag$), or a parameter ($1).
                let tag_end = b[i + 1..]
                    .iter()
                    .position(|&t| !(t.is_ascii_alphanumeric() || t == b'_'))
                    .map(|k| i + 1 + k);
                match tag_end {
                    Some(t) if b[t] == b'$' && !b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                        let tag = &b[i..=t];
                        i = memchr::memmem::find(&b[t + 1..], tag)
                            .map_or(b.len(), |k| t + 1 + k + tag.len());
                        end = i;
                    }
                    _ => {
                        i += 1;
                        end = i;
                    }
                }
            }
            b';' => i += 1,
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                i += 1;
                end = i;
            }
        }
    }
    // `end` is a byte offset past an ASCII byte or a whole quoted part: a char boundary.
    let mut out = &sql[..end];
    while let Some(s) = out.strip_suffix(';') {
        out = s.trim_end();
    }
    out
}

/// The COPY statements that read `table` in `want` pieces, in the order their rows go:
/// block ranges, key ranges of the integer primary key (each in key order, unless the
/// heap is in key order and `trust_heap_order`: then block ranges), or one piece.
pub(crate) fn pieces(
    client: &mut Client,
    server: &Server,
    table: &Table,
    want: usize,
    trust_heap_order: bool,
) -> Result<Vec<String>> {
    let select: Vec<&str> = table.columns.iter().map(|c| c.select.as_str()).collect();
    let head = format!("COPY (SELECT {} FROM {}", select.join(", "), table.from);
    let tail = ") TO STDOUT (FORMAT binary)";
    // Below this a table is read in one piece: a connection costs more than it saves.
    const MIN_BLOCKS: i64 = 2048;
    let by_key = table
        .rowid
        .filter(|_| !(trust_heap_order && table.heap_in_key_order));
    if let Some(k) = by_key {
        let key = quote_ident(&pg_column(table, k));
        let order = format!(" ORDER BY {key}");
        if want < 2 || table.blocks < MIN_BLOCKS {
            return Ok(vec![format!("{head}{order}{tail}")]);
        }
        let row = client
            .query_one(
                &format!(
                    "SELECT min({key})::int8, max({key})::int8 FROM {}",
                    table.from
                ),
                &[],
            )
            .map_err(|e| server.error(&format!("reading the key range of {}", table.shown), &e))?;
        let (lo, hi): (Option<i64>, Option<i64>) = (row.get(0), row.get(1));
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(vec![format!("{head}{order}{tail}")]);
        };
        let n = want as i128;
        let span = i128::from(hi) - i128::from(lo) + 1;
        let cut = |i: i128| (i128::from(lo) + span * i / n) as i64;
        return Ok((0..n)
            .map(|i| {
                let lower = (i > 0).then(|| format!("{key} >= {}", cut(i)));
                let upper = (i < n - 1).then(|| format!("{key} < {}", cut(i + 1)));
                let conds: Vec<String> = lower.into_iter().chain(upper).collect();
                format!("{head} WHERE {}{order}{tail}", conds.join(" AND "))
            })
            .collect());
    }
    if !table.by_blocks || want < 2 || table.blocks < MIN_BLOCKS {
        return Ok(vec![format!("{head}{tail}")]);
    }
    let n = want as i64;
    let cut = |i: i64| table.blocks * i / n;
    Ok((0..n)
        .map(|i| {
            // The last range is open: the heap may have grown since it was measured.
            let lower = (i > 0).then(|| format!("ctid >= '({},0)'::tid", cut(i)));
            let upper = (i < n - 1).then(|| format!("ctid < '({},0)'::tid", cut(i + 1)));
            let conds: Vec<String> = lower.into_iter().chain(upper).collect();
            format!("{head} WHERE {}{tail}", conds.join(" AND "))
        })
        .collect())
}

/// The PostgreSQL name of column `c` of `table` (its select expression is the quoted name).
fn pg_column(table: &Table, c: usize) -> String {
    let s = &table.columns[c].select;
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .map_or_else(|| s.clone(), |s| s.replace("\"\"", "\""))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_constants_that_sqlite_stores_as_the_copy_does_are_defaults() {
        use super::{sqlite_default, Kind};
        let text = Kind::Text;
        for (expr, kind, plain, want) in [
            ("0", Kind::Int, true, Some("0")),
            ("'-1'::integer", Kind::Int, true, Some("-1")),
            ("(-7)", Kind::Int, true, Some("-7")),
            ("1.5", Kind::Int, true, None),
            ("1.5", Kind::Float8, true, Some("1.5")),
            ("'NaN'::double precision", Kind::Float8, true, None),
            ("'1e3'::real", Kind::Float4, true, Some("1e3")),
            ("true", Kind::Bool, true, Some("1")),
            ("false", Kind::Bool, true, Some("0")),
            ("'anon'::text", text, true, Some("'anon'")),
            (
                "'it''s é'::character varying",
                text,
                true,
                Some("'it''s é'"),
            ),
            ("'{}'::integer[]", text, false, None),
            ("'x'::text", text, false, None),
            ("now()", Kind::TimestampTz, true, None),
            ("nextval('s'::regclass)", Kind::Int, true, None),
            ("'a'::text || 'b'::text", text, true, None),
            ("'2020-01-01'::date", Kind::Date, true, None),
            ("0", Kind::Numeric { real: false }, true, None),
        ] {
            assert_eq!(sqlite_default(expr, kind, plain).as_deref(), want, "{expr}");
        }
    }

    #[test]
    fn a_query_loses_what_psql_would_not_run_as_part_of_it() {
        use super::query_body;
        assert_eq!(query_body("SELECT 1"), "SELECT 1");
        assert_eq!(query_body("SELECT 1;"), "SELECT 1");
        assert_eq!(query_body("SELECT 1 ; -- done\n  "), "SELECT 1");
        assert_eq!(query_body("SELECT 1 -- c"), "SELECT 1");
        assert_eq!(query_body("SELECT 1 /* a /* b */ ; */"), "SELECT 1");
        assert_eq!(query_body("SELECT ';--' AS x;"), "SELECT ';--' AS x");
        assert_eq!(
            query_body("SELECT \"a;\"\"b\" FROM t;;"),
            "SELECT \"a;\"\"b\" FROM t"
        );
        assert_eq!(
            query_body("SELECT $x$ ; -- $x$, $1 é;"),
            "SELECT $x$ ; -- $x$, $1 é"
        );
    }
}
