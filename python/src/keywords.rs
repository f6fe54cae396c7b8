//! The keyword arguments of one call of a package function, taken by name.
//!
//! The Python function (`liteload/__init__.py`) declares its keywords and passes all of
//! them, as a dict, to its native half; this takes each by name. A keyword the native
//! half does not take, or one it takes that the dict lacks, is an error at the first
//! call (every test call), so the two lists cannot drift apart. Unknown keywords never
//! get here: Python refuses them at the call, naming them.
//!
//! Values are checked in Python's words: a value of the wrong type is a `TypeError`, a
//! value outside the choices a `ValueError` (the package's `UsageError`), both naming
//! the keyword and what it takes.

use pyo3::conversion::FromPyObjectOwned;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::usage;

/// The keywords of a call of `function`, not yet taken.
pub struct Keywords<'py> {
    function: &'static str,
    left: Bound<'py, PyDict>,
}

impl<'py> Keywords<'py> {
    /// The keywords in `dict` (copied: taking them does not change the caller's dict).
    pub fn new(function: &'static str, dict: &Bound<'py, PyDict>) -> PyResult<Self> {
        Ok(Keywords {
            function,
            left: dict.copy()?,
        })
    }

    /// The value of `name`, which the call must hold (it declares it).
    pub fn any(&mut self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let value = self.left.get_item(name)?.ok_or_else(|| {
            PyRuntimeError::new_err(format!(
                "liteload bug: {}() passes no {name}= to its native half",
                self.function
            ))
        })?;
        self.left.del_item(name)?;
        Ok(value)
    }

    /// The value of `name` as a `T`; a value that is not one is a `TypeError` that says
    /// what `name` takes (`what`).
    pub fn get<T: FromPyObjectOwned<'py>>(&mut self, name: &str, what: &str) -> PyResult<T> {
        let value = self.any(name)?;
        value
            .extract::<T>()
            .map_err(|_| self.wrong_type(name, what, &value))
    }

    /// `name`: None, or a `T`.
    pub fn option<T: FromPyObjectOwned<'py>>(
        &mut self,
        name: &str,
        what: &str,
    ) -> PyResult<Option<T>> {
        let value = self.any(name)?;
        if value.is_none() {
            return Ok(None);
        }
        value
            .extract::<T>()
            .map(Some)
            .map_err(|_| self.wrong_type(name, what, &value))
    }

    /// `name`: None, or a count (an int of 0 or more).
    pub fn count(&mut self, name: &str) -> PyResult<Option<u64>> {
        let Some(n) = self.option::<i128>(name, "an int")? else {
            return Ok(None);
        };
        u64::try_from(n).map(Some).map_err(|_| {
            usage(format!(
                "{}(): {name}={n}: expected an int from 0 to {}",
                self.function,
                u64::MAX
            ))
        })
    }

    /// `name`: None, or a count that fits a `usize`, at least `min`.
    pub fn size(&mut self, name: &str, min: usize) -> PyResult<Option<usize>> {
        let Some(n) = self.count(name)? else {
            return Ok(None);
        };
        match usize::try_from(n) {
            Ok(n) if n >= min => Ok(Some(n)),
            _ => Err(usage(format!(
                "{}(): {name}={n}: expected an int of {min} or more",
                self.function
            ))),
        }
    }

    /// `name`: None, or one of `choices` (by its Python spelling).
    pub fn choice<T: Copy>(&mut self, name: &str, choices: &[(&str, T)]) -> PyResult<Option<T>> {
        let Some(given) = self.option::<String>(name, "a str")? else {
            return Ok(None);
        };
        match choices.iter().find(|(word, _)| *word == given) {
            Some((_, value)) => Ok(Some(*value)),
            None => Err(usage(format!(
                "{}(): {name}={given:?}: expected {}",
                self.function,
                one_of(choices.iter().map(|(w, _)| *w))
            ))),
        }
    }

    /// `name`: None, or a str that `parse` turns into a `T` (its error is the reason).
    pub fn parsed<T, E: std::fmt::Display>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> PyResult<Option<T>> {
        let Some(given) = self.option::<String>(name, "a str")? else {
            return Ok(None);
        };
        parse(&given)
            .map(Some)
            .map_err(|e| usage(format!("{}(): {name}={given:?}: {e}", self.function)))
    }

    /// `name`: None, a str (one name), or a sequence of str (several); empty when None.
    pub fn names(&mut self, name: &str) -> PyResult<Vec<String>> {
        let value = self.any(name)?;
        if value.is_none() {
            return Ok(vec![]);
        }
        names_of(&value).ok_or_else(|| self.wrong_type(name, "a str or a sequence of str", &value))
    }

    /// `name`: None, or a sequence whose items are each a str (one column) or a
    /// sequence of str (several): index specs.
    pub fn name_lists(&mut self, name: &str) -> PyResult<Vec<Vec<String>>> {
        let value = self.any(name)?;
        if value.is_none() || value.is_instance_of::<PyString>() {
            let what = "a sequence whose items are each a column name or a sequence of them";
            return match value.is_none() {
                true => Ok(vec![]),
                false => Err(self.wrong_type(name, what, &value)),
            };
        }
        let mut out = vec![];
        for item in value.try_iter()? {
            let item = item?;
            let columns = names_of(&item).ok_or_else(|| {
                self.wrong_type(
                    name,
                    "items that are column names or sequences of them",
                    &item,
                )
            })?;
            if columns.is_empty() || columns.iter().any(|c| c.is_empty()) {
                return Err(usage(format!(
                    "{}(): {name}=: an index names no column: {columns:?}",
                    self.function
                )));
            }
            out.push(columns);
        }
        Ok(out)
    }

    /// The usage error `message`, said of this function.
    pub fn usage(&self, message: impl std::fmt::Display) -> PyErr {
        usage(format!("{}(): {message}", self.function))
    }

    /// Every keyword was taken; one left is a keyword the Python function passes that
    /// its native half does not know (a bug of the package, found by any call).
    pub fn finish(self) -> PyResult<()> {
        match self.left.keys().iter().next() {
            None => Ok(()),
            Some(k) => Err(PyRuntimeError::new_err(format!(
                "liteload bug: {}() passes {k}=, which its native half does not take",
                self.function
            ))),
        }
    }

    pub fn wrong_type(&self, name: &str, what: &str, value: &Bound<'py, PyAny>) -> PyErr {
        let type_name = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        PyTypeError::new_err(format!(
            "{}(): {name}= takes {what}, not {type_name}",
            self.function
        ))
    }
}

/// One str (a name), or a sequence of str; `None` when `value` is neither.
fn names_of(value: &Bound<'_, PyAny>) -> Option<Vec<String>> {
    if let Ok(s) = value.cast::<PyString>() {
        return Some(vec![s.to_cow().ok()?.into_owned()]);
    }
    let mut out = vec![];
    for item in value.try_iter().ok()? {
        out.push(
            item.ok()?
                .cast::<PyString>()
                .ok()?
                .to_cow()
                .ok()?
                .into_owned(),
        );
    }
    Some(out)
}

/// `'a', 'b' or 'c'`.
pub fn one_of<'a>(words: impl Iterator<Item = &'a str>) -> String {
    let words: Vec<String> = words.map(|w| format!("{w:?}").replace('"', "'")).collect();
    match words.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}
