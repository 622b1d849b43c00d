//! RGNN's own preprocessing of its semi-synthetic tabular graphs (karuna-bhaila/RGNN,
//! `RGNN/data.py`, classes `German` and `Student`): select attributes, bin the continuous
//! ones, threshold some counts, one-hot encode the categorical codes. Without it the raw
//! integer columns (a loan of 1 169, an age of 67) swamp the binary ones and RGNN's
//! GRR-FS sees hundreds of values per column; the released code never trains on them.
//!
//! One-hot columns follow `pandas.get_dummies`: appended after the remaining columns, per
//! encoded attribute in the order listed, one column per value present, values ascending.

use crate::error::Result;

/// Which of the released code's recipes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    German,
    Student,
}

const GERMAN_SELECTED: [&str; 37] = [
    "Gender",
    "ForeignWorker",
    "Single",
    "Age",
    "LoanDuration",
    "LoanAmount",
    "LoanRateAsPercentOfIncome",
    "YearsAtCurrentHome",
    "NumberOfOtherLoansAtBank",
    "NumberOfLiableIndividuals",
    "HasTelephone",
    "CheckingAccountBalance_geq_0",
    "CheckingAccountBalance_geq_200",
    "SavingsAccountBalance_geq_100",
    "SavingsAccountBalance_geq_500",
    "MissedPayments",
    "NoCurrentLoan",
    "CriticalAccountOrLoansElsewhere",
    "OtherLoansAtBank",
    "HasCoapplicant",
    "HasGuarantor",
    "OwnsHouse",
    "RentsHouse",
    "Unemployed",
    "YearsAtCurrentJob_lt_1",
    "YearsAtCurrentJob_geq_4",
    "JobClassIsSkilled",
    "PurposeOfLoan_Business",
    "PurposeOfLoan_Education",
    "PurposeOfLoan_Electronics",
    "PurposeOfLoan_Furniture",
    "PurposeOfLoan_HomeAppliances",
    "PurposeOfLoan_NewCar",
    "PurposeOfLoan_Other",
    "PurposeOfLoan_Repairs",
    "PurposeOfLoan_Retraining",
    "PurposeOfLoan_UsedCar",
];
const GERMAN_ENCODED: [&str; 3] = ["Age", "LoanDuration", "LoanAmount"];

const STUDENT_SELECTED: [&str; 25] = [
    "school",
    "sex",
    "age",
    "address",
    "famsize",
    "Pstatus",
    "Medu",
    "Fedu",
    "Mjob",
    "Fjob",
    "reason",
    "guardian",
    "traveltime",
    "failures",
    "schoolsup",
    "famsup",
    "paid",
    "activities",
    "nursery",
    "higher",
    "internet",
    "romantic",
    "goout",
    "G1",
    "G2",
];
const STUDENT_ENCODED: [&str; 10] = ["age", "Medu", "Fedu", "Mjob", "Fjob", "reason", "guardian", "traveltime", "failures", "goout"];

/// `x` ≤ the first bound → the first value, in (bound_i, bound_{i+1}] → value_{i+1}, above
/// the last bound → the last value (data.py's chains of `df.loc[...]`).
fn bin(x: f64, bounds: &[f64], values: &[f64]) -> f64 {
    bounds.iter().position(|&b| x <= b).map_or(values[values.len() - 1], |i| values[i])
}

/// Apply `recipe` to named columns; returns the new columns. `err` names the file for a
/// missing attribute.
pub fn apply(recipe: Recipe, names: &[String], columns: &[Vec<f64>], err: &dyn Fn(&str) -> crate::error::Error) -> Result<Vec<Vec<f64>>> {
    let (selected, encoded): (&[&str], &[&str]) = match recipe {
        Recipe::German => (&GERMAN_SELECTED, &GERMAN_ENCODED),
        Recipe::Student => (&STUDENT_SELECTED, &STUDENT_ENCODED),
    };
    let mut cols: Vec<(String, Vec<f64>)> = Vec::with_capacity(selected.len());
    for &s in selected {
        let i = names
            .iter()
            .position(|n| n == s)
            .ok_or_else(|| err(&format!("no vertex attribute `{s}` (RGNN's {recipe:?} preprocessing selects it)")))?;
        cols.push((s.to_string(), columns[i].clone()));
    }
    let map = |cols: &mut Vec<(String, Vec<f64>)>, name: &str, f: &dyn Fn(f64) -> f64| {
        if let Some((_, c)) = cols.iter_mut().find(|(n, _)| n == name) {
            c.iter_mut().for_each(|x| *x = f(*x));
        }
    };
    let flag = |b: bool| f64::from(u8::from(b));
    match recipe {
        Recipe::German => {
            map(&mut cols, "NumberOfLiableIndividuals", &|x| x - 1.0);
            map(&mut cols, "Age", &|x| bin(x, &[30.0, 50.0], &[0.0, 30.0, 50.0]));
            map(&mut cols, "LoanDuration", &|x| bin(x, &[10.0, 20.0, 30.0], &[0.0, 10.0, 20.0, 30.0]));
            map(&mut cols, "LoanAmount", &|x| bin(x, &[1000.0, 2000.0, 3000.0, 4000.0], &[0.0, 1000.0, 2000.0, 3000.0, 4000.0]));
            map(&mut cols, "LoanRateAsPercentOfIncome", &|x| flag(x >= 3.0));
            map(&mut cols, "YearsAtCurrentHome", &|x| flag(x >= 3.0));
            map(&mut cols, "NumberOfOtherLoansAtBank", &|x| flag(x > 1.0));
        }
        Recipe::Student => {
            map(&mut cols, "G1", &|x| flag(x >= 10.0));
            map(&mut cols, "G2", &|x| flag(x >= 10.0));
            map(&mut cols, "age", &|x| if x == 20.0 { 19.0 } else { x });
        }
    }
    let mut dummies = Vec::new();
    for &e in encoded {
        let (_, c) = cols.iter().find(|(n, _)| n == e).expect("an encoded attribute is selected");
        let mut values: Vec<f64> = c.clone();
        values.sort_by(f64::total_cmp);
        values.dedup();
        for v in values {
            dummies.push((format!("{e}_{v}"), c.iter().map(|&x| flag(x == v)).collect()));
        }
    }
    cols.retain(|(n, _)| !encoded.contains(&n.as_str()));
    cols.extend(dummies);
    Ok(cols.into_iter().map(|(_, c)| c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_as_data_py() {
        let (b, v) = ([1000.0, 2000.0, 3000.0, 4000.0], [0.0, 1000.0, 2000.0, 3000.0, 4000.0]);
        assert_eq!(
            [1000.0, 1000.5, 1169.0, 4000.0, 4000.5, 18424.0].map(|x| bin(x, &b, &v)),
            [0.0, 1000.0, 1000.0, 3000.0, 4000.0, 4000.0]
        );
        assert_eq!([30.0, 31.0, 50.0, 67.0].map(|x| bin(x, &[30.0, 50.0], &[0.0, 30.0, 50.0])), [0.0, 30.0, 30.0, 50.0]);
    }
}
