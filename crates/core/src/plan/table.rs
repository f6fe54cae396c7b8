//! What a load does to the table its rows go to ([`TableDecision`]), decided from the
//! table as read, the input's sample and the [`WriteRules`]: made (with which key), replaced,
//! taken as it is, or widened by the columns it lacks; and every refusal (a table that
//! exists under `fail`, a column it lacks without alter, a key or index on a column
//! that is not there) before any of it is done.
//!
//! The rule is decided here and nowhere else. The plan applies it to the first load's
//! sample against the file as it reads it without a lock, so a load the writer would
//! refuse is refused before any writer is touched; the writers of SQLite's path (a
//! file's connection, a cluster's statements) apply it again to the table as they find
//! it where they write (inside their transaction), and run its statements.

use std::collections::HashSet;

use super::{Continued, TableShape, WriteRules};
use crate::error::{Error, Hint, Result};
use crate::options::OnConflict;
use crate::schema::quote_ident;
use crate::table::{self, IfExists, TableColumn};
use crate::types::ColumnType;

/// How one input's columns land in the table.
#[derive(Clone, Debug)]
pub(crate) struct TablePlan {
    /// The table's actual name (an existing one's spelling).
    pub(crate) table: String,
    /// The table's columns the batches fill, in batch order.
    pub(crate) columns: Vec<String>,
    /// The types the source converts to: an existing table's declared ones where it
    /// declares one, else the sample's.
    pub(crate) types: Vec<ColumnType>,
    /// Whether columns may be added to it as the input goes (created in this run, or
    /// alter asked for).
    pub(crate) may_alter: bool,
}

/// What a table's load does before its rows: run `statements` in order, then write the
/// rows as `plan` says.
#[derive(Clone, Debug)]
pub(crate) struct TableDecision {
    /// DROP TABLE, CREATE TABLE and ALTER TABLE … ADD COLUMN statements, in order;
    /// every identifier quoted, no value in them.
    pub(crate) statements: Vec<String>,
    /// Whether the statements make the table (the writer then counts it among the
    /// tables the load made, which later inputs may replace or widen freely).
    pub(crate) creates: bool,
    pub(crate) plan: TablePlan,
}

/// What the load does to `table` under `rules`, the table being `existing` (its actual
/// name and columns, `None` when absent) and the input's sample `columns` of types
/// `inferred`. `created` holds the tables this load made so far (lowercase): those are
/// widened freely and never replaced. A table of a copy has its `shape`, whose key and
/// indexes stand for the options'. A table of a spec (its `shape.declared`) is
/// [`decide_spec`]'s, not this.
pub(crate) fn decide(
    table: &str,
    existing: Option<(String, Vec<TableColumn>)>,
    columns: &[String],
    inferred: &[ColumnType],
    rules: &WriteRules,
    shape: Option<&TableShape>,
    created: &HashSet<String>,
) -> Result<TableDecision> {
    let (shape_key, indexes): (Vec<String>, &[table::IndexSpec]) = match shape {
        Some(s) => (s.rowid.iter().cloned().collect(), &s.indexes),
        None => (vec![], &rules.indexes),
    };
    let check_names = |what: &str, names: &[String], have: &[String]| -> Result<()> {
        for n in names {
            if !have.iter().any(|c| c.eq_ignore_ascii_case(n)) {
                return Err(Error::usage(format!(
                    "{what} {n:?}: table {} has no such column (columns: {})",
                    quote_ident(table),
                    have.join(", ")
                )));
            }
        }
        Ok(())
    };
    let create = |statements: Vec<String>| -> Result<TableDecision> {
        if columns.is_empty() {
            return Err(Error::usage(format!(
                "no columns for the new table {}: the input has no records to name them",
                quote_ident(table)
            )));
        }
        // A conflict rule's key is the primary key of a table made for the load.
        let pk = if shape.is_some() {
            &shape_key
        } else if rules.pk.is_empty() && rules.on_conflict != OnConflict::Fail {
            &rules.key
        } else {
            &rules.pk
        };
        check_names("primary key column", pk, columns)?;
        for ix in indexes {
            check_names("index column", &ix.columns, columns)?;
        }
        crate::schema::check_new_table(table, columns.iter().map(String::as_str))?;
        let cols: Vec<(String, ColumnType)> = columns
            .iter()
            .cloned()
            .zip(inferred.iter().copied())
            .collect();
        let mut statements = statements;
        let none = table::Constraints::default();
        let constraints = shape.map_or(&none, |s| &s.constraints);
        statements.push(table::create_sql_referencing(table, &cols, pk, constraints));
        Ok(TableDecision {
            statements,
            creates: true,
            plan: TablePlan {
                table: table.to_string(),
                columns: columns.to_vec(),
                types: inferred.to_vec(),
                may_alter: true,
            },
        })
    };
    let Some((actual, existing)) = existing else {
        return create(vec![]);
    };
    let ours = created.contains(&actual.to_ascii_lowercase());
    if rules.if_exists != IfExists::Append && !ours {
        if rules.if_exists == IfExists::Fail {
            return Err(
                Error::schema(format!("table {} exists already", quote_ident(&actual)))
                    .with_hint(Hint::OtherTable),
            );
        }
        return create(vec![format!("DROP TABLE {}", quote_ident(&actual))]);
    }
    if !rules.pk.is_empty() && !ours {
        return Err(Error::schema(format!(
            "a primary key applies when liteload creates the table, and {} exists already",
            quote_ident(&actual)
        )));
    }
    let may_alter = rules.alter || ours;
    let mut statements = vec![];
    let mut names = vec![];
    let mut types = vec![];
    let mut have: Vec<String> = existing.iter().map(|c| c.name.clone()).collect();
    for (i, col) in columns.iter().enumerate() {
        match existing.iter().find(|c| c.name.eq_ignore_ascii_case(col)) {
            Some(c) => {
                let typed = rules
                    .typed_columns
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(col));
                let ty = if typed {
                    inferred[i]
                } else {
                    ColumnType::from_declared(&c.declared).unwrap_or(inferred[i])
                };
                names.push(c.name.clone());
                types.push(ty);
            }
            None if may_alter => {
                statements.push(table::add_column_sql(&actual, col, inferred[i]));
                names.push(col.clone());
                types.push(inferred[i]);
                have.push(col.clone());
            }
            None => {
                return Err(Error::schema(format!(
                    "table {} has no column {col:?} (it has: {})",
                    quote_ident(&actual),
                    have.join(", ")
                ))
                .with_hint(Hint::Alter))
            }
        }
    }
    check_width(&actual, have.len())?;
    for ix in indexes {
        check_names("index column", &ix.columns, &have)?;
    }
    Ok(TableDecision {
        statements,
        creates: false,
        plan: TablePlan {
            table: actual,
            columns: names,
            types,
            may_alter,
        },
    })
}

/// What the load of a spec (generate's) does to its `table`, declared by `create`:
/// made when the plan found none (`continued` is `None`) and the writer finds none
/// (`now`); continued when the writer finds it as the plan read it. Otherwise the load
/// fails with nothing written: the rows were numbered from what the plan read.
pub(crate) fn decide_spec(
    table: &str,
    columns: &[String],
    types: &[ColumnType],
    create: &str,
    continued: Option<&Continued>,
    now: Option<(String, Continued)>,
) -> Result<TableDecision> {
    let (actual, statements) = match (now, continued) {
        (None, None) => (table.to_string(), vec![create.to_string()]),
        (Some((actual, now)), Some(planned)) if now == *planned => (actual, vec![]),
        _ => return Err(crate::destination::changed_since_planned(table)),
    };
    Ok(TableDecision {
        creates: !statements.is_empty(),
        statements,
        plan: TablePlan {
            table: actual,
            columns: columns.to_vec(),
            types: types.to_vec(),
            may_alter: false,
        },
    })
}

/// The statements that add to `plan`'s table, which has the columns `existing`, those of
/// `columns` (seen in the input after its sample) it lacks; the load fails instead when
/// the plan may not alter the table, or when the table would pass SQLite's column limit.
pub(crate) fn widening(
    plan: &TablePlan,
    existing: &[TableColumn],
    columns: &[(String, ColumnType)],
) -> Result<Vec<String>> {
    let new: Vec<&(String, ColumnType)> = columns
        .iter()
        .filter(|(n, _)| !existing.iter().any(|c| c.name.eq_ignore_ascii_case(n)))
        .collect();
    check_width(&plan.table, existing.len() + new.len())?;
    let mut statements = vec![];
    for (name, ty) in new {
        if !plan.may_alter {
            return Err(Error::schema(format!(
                "table {} has no column {name:?}, which the input has from some record on",
                quote_ident(&plan.table)
            ))
            .with_hint(Hint::Alter));
        }
        statements.push(table::add_column_sql(&plan.table, name, *ty));
    }
    Ok(statements)
}

/// Fails when `table` would have `columns` columns, more than SQLite allows.
fn check_width(table: &str, columns: usize) -> Result<()> {
    if columns > crate::schema::MAX_COLUMNS {
        return Err(Error::schema(format!(
            "table {} would have {columns} columns, more than SQLite's limit of {}",
            quote_ident(table),
            crate::schema::MAX_COLUMNS
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rusqlite::Connection;

    fn rules(if_exists: IfExists, alter: bool) -> WriteRules {
        WriteRules::of(&crate::ImportOptions {
            if_exists,
            alter,
            ..crate::ImportOptions::default()
        })
    }

    /// Column names that collide as SQLite compares them (ASCII case), and some that
    /// are not ASCII.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_string()),
            Just("A".to_string()),
            Just("b".to_string()),
            Just("Ünïcode".to_string()),
            Just("sp ace".to_string()),
            Just("q\"uote".to_string()),
        ]
    }

    proptest! {
        /// Whatever the table holds and the input names, a decision either refuses
        /// with nothing to run, or its statements run in SQLite and leave a table that
        /// has every column the plan writes, one per input column, in input order; a
        /// refusal happens exactly when the rule says (a column the table lacks without
        /// alter, a table that exists under `fail`).
        #[test]
        fn a_decision_runs_in_sqlite_and_names_the_columns_it_writes(
            existing in prop::option::of(prop::collection::vec(name(), 1..4)),
            input in prop::collection::vec(name(), 1..5),
            if_exists in prop_oneof![Just(IfExists::Append), Just(IfExists::Replace), Just(IfExists::Fail)],
            alter in any::<bool>(),
        ) {
            let dedup = |names: Vec<String>| {
                let mut out: Vec<String> = vec![];
                for n in names {
                    if !out.iter().any(|o| o.eq_ignore_ascii_case(&n)) {
                        out.push(n);
                    }
                }
                out
            };
            let input = dedup(input);
            let conn = Connection::open_in_memory().unwrap();
            if let Some(cols) = &existing {
                let cols: Vec<(String, ColumnType)> =
                    dedup(cols.clone()).into_iter().map(|c| (c, ColumnType::Text)).collect();
                conn.execute_batch(&table::create_sql("T", &cols, &[])).unwrap();
            }
            let found = table::existing_columns(&conn, "t").unwrap();
            let have: Vec<String> =
                found.iter().flat_map(|(_, c)| c.iter().map(|c| c.name.clone())).collect();
            let types = vec![ColumnType::Integer; input.len()];
            let decided = decide(
                "t", found.clone(), &input, &types, &rules(if_exists, alter), None, &HashSet::new(),
            );
            let lacks = input.iter().any(|c| !have.iter().any(|h| h.eq_ignore_ascii_case(c)));
            let refused = match (&found, if_exists) {
                (None, _) | (Some(_), IfExists::Replace) => false,
                (Some(_), IfExists::Fail) => true,
                (Some(_), IfExists::Append) => lacks && !alter,
            };
            prop_assert_eq!(decided.is_err(), refused, "{:?}", decided);
            let Ok(d) = decided else { return Ok(()) };
            for sql in &d.statements {
                conn.execute_batch(sql).unwrap();
            }
            let after: Vec<String> = table::existing_columns(&conn, &d.plan.table)
                .unwrap()
                .unwrap()
                .1
                .into_iter()
                .map(|c| c.name)
                .collect();
            prop_assert_eq!(d.plan.columns.len(), input.len());
            for (planned, given) in d.plan.columns.iter().zip(&input) {
                prop_assert!(planned.eq_ignore_ascii_case(given));
                prop_assert!(after.contains(planned), "{planned:?} not in {after:?}");
            }
            prop_assert_eq!(d.creates, found.is_none() || if_exists == IfExists::Replace);
        }
    }

    #[test]
    fn a_column_seen_late_widens_only_a_table_the_plan_may_alter() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (a)").unwrap();
        let cols = table::existing_columns(&conn, "t").unwrap().unwrap().1;
        let mut plan = TablePlan {
            table: "t".into(),
            columns: vec!["a".into()],
            types: vec![ColumnType::Text],
            may_alter: false,
        };
        let late = [
            ("A".to_string(), ColumnType::Text),
            ("b".into(), ColumnType::Real),
        ];
        let refused = widening(&plan, &cols, &late).unwrap_err();
        assert!(
            refused.to_string().contains("has no column \"b\""),
            "{refused}"
        );
        plan.may_alter = true;
        let sql = widening(&plan, &cols, &late).unwrap();
        assert_eq!(sql.len(), 1, "{sql:?}");
        conn.execute_batch(&sql[0]).unwrap();
        let after = table::existing_columns(&conn, "t").unwrap().unwrap().1;
        assert_eq!(
            after.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }
}
