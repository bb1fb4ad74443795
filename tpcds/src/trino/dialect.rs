//! The query files in Trino's SQL dialect: the rewrites listed in `tpcds/queries/trino.tsv`
//! (data, next to the queries, rather than edited copies of them), and the statements whose
//! rows differ between the engines by semantics, with the cause
//! (`tpcds/queries/trino-differences.tsv`).

use regex::Regex;

use crate::error::{Error, Result};

const RULES: &str = include_str!("../../queries/trino.tsv");
const DIFFERENCES: &str = include_str!("../../queries/trino-differences.tsv");

/// Why statement `name` (`q36`, `q14_2`) may differ from DataFusion's rows, if it may.
pub fn known_difference(name: &str) -> Option<&'static str> {
    DIFFERENCES
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (statement, cause) = line.split_once('\t')?;
            (statement == name).then_some(cause)
        })
}

/// One line of `trino.tsv`.
struct Rule {
    /// `None` for every query.
    query: Option<u32>,
    pattern: Regex,
    replacement: String,
}

fn rules() -> Result<Vec<Rule>> {
    let mut rules = Vec::new();
    for (i, line) in RULES.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| Error::Invalid(format!("trino.tsv line {}: {what}", i + 1));
        let fields: Vec<&str> = line.split('\t').collect();
        let [scope, pattern, replacement] = fields[..] else {
            return Err(bad("want three TAB-separated fields"));
        };
        let query = match scope {
            "all" => None,
            q => Some(
                q.strip_prefix('q')
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| bad("the first field is `all` or `qN`"))?,
            ),
        };
        let pattern = Regex::new(pattern).map_err(|e| bad(&e.to_string()))?;
        rules.push(Rule {
            query,
            pattern,
            replacement: replacement.to_string(),
        });
    }
    Ok(rules)
}

/// Query `n`'s text (DataFusion's dialect) in Trino's.
pub fn to_trino(n: u32, sql: &str) -> Result<String> {
    let mut sql = sql.to_string();
    for rule in rules()? {
        match rule.query {
            None => {
                sql = rule
                    .pattern
                    .replace_all(&sql, rule.replacement.as_str())
                    .into_owned()
            }
            Some(q) if q == n => {
                if !rule.pattern.is_match(&sql) {
                    return Err(Error::Invalid(format!(
                        "trino.tsv: the rule for q{n} ({}) matches nothing in it",
                        rule.pattern
                    )));
                }
                sql = rule
                    .pattern
                    .replace_all(&sql, rule.replacement.as_str())
                    .into_owned();
            }
            Some(_) => {}
        }
    }
    Ok(sql)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries;

    #[test]
    fn every_rule_parses_and_every_query_rewrites() {
        assert!(!rules().unwrap().is_empty());
        let datafusion_interval = Regex::new(r"(?i)interval \d+ days").unwrap();
        for n in 1..=99 {
            let sql = queries::query(n).unwrap();
            let trino = to_trino(n, sql).unwrap();
            assert!(!datafusion_interval.is_match(&trino), "q{n}: {trino}");
        }
    }

    #[test]
    fn known_differences_have_causes() {
        assert!(known_difference("q36").is_some_and(|c| c.contains("scale 2")));
        assert_eq!(known_difference("q3"), None);
        assert_eq!(known_difference("q"), None);
    }

    #[test]
    fn date_literals_are_cast() {
        let q94 = to_trino(94, queries::query(94).unwrap()).unwrap();
        assert!(
            q94.contains("d_date between cast('1999-4-01' as date) and"),
            "{q94}"
        );
        let q58 = to_trino(58, queries::query(58).unwrap()).unwrap();
        assert!(q58.contains("d_date = cast('2000-02-12' as date)"), "{q58}");
        let q83 = to_trino(83, queries::query(83).unwrap()).unwrap();
        assert!(q83.contains("date '2000-09-09'"), "{q83}");
    }

    #[test]
    fn intervals_take_the_standard_form() {
        let sql = "select d_date + interval 30 days from date_dim";
        assert_eq!(
            to_trino(1, sql).unwrap(),
            "select d_date + interval '30' day from date_dim"
        );
    }
}
