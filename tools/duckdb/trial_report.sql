-- The fit and the detection table of `gaenctl trial report`, in DuckDB, from attenuation rows
-- (a report's attenuation.csv, or many of them: one per board per day, read with a glob).
-- Parameters (replace before running): {files} a path or glob such as 'out/*/attenuation.csv',
-- {close} the close-contact distance in metres, {thresholds} a list such as [55, 63, 73].
-- Columns used: distance (m), attenuation (dB). docs/trial.md, "DuckDB recipe".
CREATE OR REPLACE TEMP VIEW obs AS
    SELECT CAST(distance AS DOUBLE) AS distance, CAST(attenuation AS DOUBLE) AS attenuation,
           log10(greatest(CAST(distance AS DOUBLE), 0.1)) AS x
    FROM read_csv({files}, header = true, union_by_name = true, all_varchar = true)
    WHERE distance IS NOT NULL AND distance <> '';

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
