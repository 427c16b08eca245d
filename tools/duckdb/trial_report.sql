-- The fit and the detection table of `gaenctl trial report`, in DuckDB, from attenuation rows
-- (a report's attenuation.csv, or many files: the daily layout of `trial report --split daily`,
-- attenuation/board=<receiver>/day=<YYYY-MM-DD>/attenuation.csv, or its Parquet copy).
-- Parameters (replace before running): {source} a table expression such as
--   read_csv('out/attenuation/*/*/attenuation.csv', header = true, union_by_name = true, all_varchar = true)
--   read_parquet('out/parquet/*/*/*.parquet', hive_partitioning = true)
-- {close} the close-contact distance in metres, {thresholds} a list such as [55, 63, 73].
-- Columns used: distance (m), attenuation (dB), text or numbers. docs/trial.md, "DuckDB recipe".
CREATE OR REPLACE TEMP VIEW obs AS
    SELECT d AS distance, a AS attenuation, log10(greatest(d, 0.1)) AS x
    FROM (SELECT TRY_CAST(distance AS DOUBLE) AS d, TRY_CAST(attenuation AS DOUBLE) AS a FROM {source})
    WHERE d IS NOT NULL AND a IS NOT NULL;

-- fit: attenuation = A(1 m) + slope * log10(d), least squares; sigma with n - 2 degrees of freedom.
CREATE OR REPLACE TEMP VIEW fit AS
    SELECT regr_intercept(attenuation, x) AS attenuation_at_1m_db,
           regr_slope(attenuation, x) AS slope_db_per_decade,
           sqrt((regr_syy(attenuation, x) - regr_slope(attenuation, x) * regr_sxy(attenuation, x)) / (count(*) - 2)) AS sigma_db,
           regr_r2(attenuation, x) AS r_squared,
           count(*) AS count
    FROM obs;

-- detection: per threshold, predicted close = attenuation <= T, truly close = distance <= C.
CREATE OR REPLACE TEMP VIEW detection AS
    SELECT t AS threshold_db,
           count(*) FILTER (WHERE distance <= {close}) AS close,
           count(*) FILTER (WHERE distance > {close}) AS far,
           count(*) FILTER (WHERE distance <= {close} AND attenuation <= t) AS true_positives,
           count(*) FILTER (WHERE distance > {close} AND attenuation <= t) AS false_positives,
           true_positives / nullif(close, 0) AS true_positive_rate,
           false_positives / nullif(far, 0) AS false_positive_rate,
           true_positives / nullif(true_positives + false_positives, 0) AS precision
    FROM obs, unnest({thresholds}) AS u(t)
    GROUP BY t ORDER BY t;
