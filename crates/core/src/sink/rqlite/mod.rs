//! An rqlite cluster that holds data as a sink ([`ClusterSink`]): each table decided by
//! the rule a load into a file follows ([`crate::plan::table`]) on the cluster's
//! definition of it, the decision's statements sent first, then the rows
//! as `?transaction` requests, each recording its rows in the progress table, so a
//! rerun after a kill goes on where the cluster stopped (see [`crate::rqlite`]).

pub(crate) mod client;
pub(crate) mod encode;
pub(crate) mod load;
pub(crate) mod progress;
pub(crate) mod send;
pub(crate) mod target;

use std::collections::HashSet;
use std::sync::Arc;

use super::{BatchSink, SampledTable, Sink, TableStart};
use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::plan::table as table_plan;
use crate::plan::{TableShape, WriteRules};
use crate::progress::{Progress, Stage};
use crate::schema::quote_ident;
use crate::summary::{Durable, EngineUsed, Summary};
use crate::types::ColumnType;
use client::Client;
use load::{cluster_table, mirror_of, plain, table_columns, Shape, TableLoad};
use progress::{create_progress_sql, LoadKey};

/// A load into a cluster that holds data, table after table, its senders on `scope`.
pub(crate) struct ClusterSink<'c, 'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    client: &'c Client,
    rules: &'c WriteRules,
    progress: &'c Progress,
    shape: Shape,
    in_flight: usize,
    /// Tables this load created (lowercase).
    created: HashSet<String>,
    /// Tables loaded, in order, for the indexes.
    loaded: Vec<String>,
    current: Option<TableLoad<'c, 'scope>>,
    notes: Vec<String>,
    /// The table of a spec (generate's), and the key its progress is recorded under.
    spec: Option<(TableShape, LoadKey)>,
}

impl<'c, 'scope, 'env> ClusterSink<'c, 'scope, 'env>
where
    'c: 'scope,
{
    /// A load with `rules` through `client`, requests shaped by `shape`,
    /// `in_flight` of them at once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        client: &'c Client,
        rules: &'c WriteRules,
        progress: &'c Progress,
        shape: Shape,
        in_flight: usize,
    ) -> Self {
        ClusterSink {
            scope,
            client,
            rules,
            progress,
            shape,
            in_flight,
            created: HashSet::new(),
            loaded: vec![],
            current: None,
            notes: vec![],
            spec: None,
        }
    }

    /// Loads the table of a spec (generate's): made with the shape's declaration when
    /// the plan found none, or continued as the plan read it (its columns exactly; its
    /// rows were numbered from the largest rowid the plan read, less the rows an
    /// interrupted run put in). Its progress is recorded under `key`, so that a run of
    /// the same spec resumes.
    pub(crate) fn with_spec(mut self, shape: TableShape, key: LoadKey) -> Self {
        self.spec = Some((shape, key));
        self
    }

    /// Ends the table begun last: the rest sent, every answer in, the load marked
    /// finished.
    fn end_table(&mut self) -> Result<()> {
        if let Some(current) = self.current.take() {
            self.progress.set_stage(Stage::Committing);
            current.end()?;
        }
        Ok(())
    }

    /// After a failed load: stops the table's senders (what they were sending is sent)
    /// and returns the first error one of them met, if any.
    pub(crate) fn abandon(&mut self) -> Option<Error> {
        self.current.take().and_then(TableLoad::abandon)
    }

    fn current(&mut self) -> Result<&mut TableLoad<'c, 'scope>> {
        self.current
            .as_mut()
            .ok_or_else(|| Error::internal("rows came before their table was begun"))
    }
}

impl<'c, 'scope, 'env> BatchSink for ClusterSink<'c, 'scope, 'env>
where
    'c: 'scope,
{
    fn write_batch(
        &mut self,
        batch: &Batch,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        self.current()?.sink().write_batch(batch, bad)
    }

    fn add_columns(&mut self, columns: &[(String, ColumnType)]) -> Result<()> {
        self.current()?.sink().add_columns(columns)
    }
}

impl<'c, 'scope, 'env> Sink for ClusterSink<'c, 'scope, 'env>
where
    'c: 'scope,
{
    fn begin(&mut self, sampled: &SampledTable<'_>) -> Result<TableStart> {
        self.end_table()?;
        let client = self.client;
        // The table as the cluster has it now, decided by the same rule as a load into
        // a file; the decision's statements go first in the table's first request. An
        // in-memory copy of the table's definition reads its columns, then takes the
        // statements too, to read the primary key of the table as planned.
        let mirror = rusqlite::Connection::open_in_memory()
            .map_err(|e| Error::sqlite("opening :memory:", e))?;
        let before = cluster_table(client, sampled.table)?;
        if let Some((_, sql)) = &before {
            mirror
                .execute_batch(sql)
                .map_err(|e| Error::sqlite("copying the cluster's table definition", e))?;
        }
        let spec = self.spec.as_ref().filter(|(s, _)| s.table == sampled.table);
        let decision = match spec {
            Some((shape, key)) => {
                let create = shape
                    .declared
                    .as_deref()
                    .ok_or_else(|| Error::internal("a spec's table has no declaration"))?;
                table_plan::decide_spec(
                    sampled.table,
                    sampled.columns,
                    sampled.types,
                    create,
                    shape.continued.as_ref(),
                    spec_held(client, sampled.table, key)?,
                )?
            }
            None => table_plan::decide(
                sampled.table,
                crate::table::existing_columns(&mirror, sampled.table)?,
                sampled.columns,
                sampled.types,
                self.rules,
                None,
                &self.created,
            )?,
        };
        let prelude = vec![plain(&create_progress_sql())];
        let mut table_ready = vec![];
        for sql in &decision.statements {
            mirror
                .execute_batch(sql)
                .map_err(|e| Error::sqlite(format!("running {sql} on the table's copy"), e))?;
            table_ready.push(plain(sql));
        }
        if decision.creates {
            self.created
                .insert(decision.plan.table.to_ascii_lowercase());
        }
        let plan = decision.plan;
        let input = sampled.input;
        let name = sampled.name;
        let key = match spec {
            Some((_, key)) => key.clone(),
            None => {
                let primary_key: Vec<String> = mirror
                    .prepare("SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk")
                    .and_then(|mut st| {
                        st.query_map([&plan.table], |r| r.get(0))?
                            .collect::<rusqlite::Result<_>>()
                    })
                    .map_err(|e| Error::sqlite("reading the planned table's primary key", e))?;
                LoadKey {
                    input: name.to_string(),
                    table: plan.table.clone(),
                    input_bytes: input.and_then(crate::Input::size),
                    primary_key,
                    resumable: matches!(input, Some(crate::Input::Path(_))),
                }
            }
        };
        if !self.loaded.contains(&plan.table) {
            self.loaded.push(plan.table.clone());
        }
        let source: Arc<str> = name.into();
        self.current = TableLoad::start(
            self.scope,
            client,
            &plan.table,
            &plan.columns,
            key,
            source,
            prelude,
            table_ready,
            self.shape,
            self.in_flight,
            &mut self.notes,
        )?;
        Ok(match self.current {
            Some(_) => TableStart::Write(plan),
            None => TableStart::AlreadyLoaded(plan),
        })
    }

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        self.end_table()?;
        for (t, ix) in self
            .loaded
            .iter()
            .flat_map(|t| self.rules.indexes.iter().map(move |ix| (t, ix)))
        {
            self.progress.set_stage(Stage::Indexing);
            let Some(sql) = cluster_index_sql(self.client, t, ix)? else {
                continue;
            };
            let body = format!("[{}]", plain(&sql));
            self.client
                .execute(body.as_bytes(), true)
                .map_err(Error::from)?;
        }
        summary.notes.append(&mut self.notes);
        summary.durability = Durable::Cluster;
        summary.engine = Some(EngineUsed::Rqlite);
        summary.rows_per_statement = 0;
        Ok(())
    }
}

/// What the cluster holds of a spec's `table` now: its actual name, its columns, and
/// its largest rowid less the rows an interrupted run under `key` put in (the rows of
/// a run are the last ones in: it started below them). `None` when it has no such
/// table. The plan reads it before the load, the sink again when it begins the table.
pub(crate) fn spec_held(
    client: &Client,
    table: &str,
    key: &LoadKey,
) -> Result<Option<(String, crate::plan::Continued)>> {
    let Some((actual, sql)) = cluster_table(client, table)? else {
        return Ok(None);
    };
    let columns = table_columns(&mirror_of(&sql)?, &actual)?;
    let max = client
        .query_rows(
            &format!(
                "SELECT coalesce(max(rowid), 0) FROM {}",
                quote_ident(&actual)
            ),
            &[],
        )?
        .first()
        .and_then(|r| r.first())
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(0);
    let resumed = progress::read_resume(client, key)?.rows_in() as i64;
    let last_rowid = max - resumed;
    Ok(Some((
        actual,
        crate::plan::Continued {
            columns,
            last_rowid,
        },
    )))
}

/// The `CREATE INDEX` that gives the cluster's `table` the index `ix` asks for, under a
/// name no object of the cluster's database has; `None` when the table has it already.
fn cluster_index_sql(
    client: &Client,
    table: &str,
    ix: &crate::table::IndexSpec,
) -> Result<Option<String>> {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let held = crate::table::group_held(
        client
            .query_rows(crate::table::HELD_INDEXES_SQL, &[table.into()])?
            .iter()
            .map(|r| {
                (
                    r.first().and_then(text).unwrap_or_default(),
                    r.get(1).and_then(serde_json::Value::as_i64).unwrap_or(0) != 0,
                    r.get(2).and_then(text),
                )
            }),
    );
    crate::names::index_to_make(
        &held,
        || {
            let mut names = crate::names::Names::new();
            for r in client.query_rows("SELECT name FROM sqlite_schema", &[])? {
                if let Some(n) = r.first().and_then(text) {
                    names.claim(&n);
                }
            }
            Ok(names)
        },
        table,
        ix,
    )
}
