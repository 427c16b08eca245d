-- `gaenctl trial report`'s attenuation rows, in DuckDB, from the sightings themselves: the
-- sightings (daily layout or any files) joined with the RPI table of `gaenctl trial rpis`, the
-- TX power taken from the AEM, the attenuation computed and the ground-truth distance joined
-- from the markers, by the rules of TrialKit (docs/trial.md, "DuckDB recipe from sightings").
-- Parameters (replace before running):
--   {sightings} a table expression with the sightings columns and `board` (hive partitioning), e.g.
--     read_csv('DIR/sightings/*/*/sightings.csv', header = true, hive_partitioning = true, columns = {...})
--   {rpis}      read_csv('rpis.csv', header = true, columns = {...}) (`gaenctl trial rpis --keys ... -o rpis.csv`)
--   {markers}   read_csv('markers.csv', header = true, all_varchar = true) with the columns time, label,
--               distance, receiver, transmitter (a file without the last two:
--               (SELECT *, '' AS receiver, '' AS transmitter FROM read_csv(..., all_varchar = true)))
-- Result: the view `attenuation` (time, receiver, transmitter, distance, attenuation, rpi,
-- tx_power, rssi, rssi_correction), one row per row of `trial report`'s attenuation.csv;
-- tools/duckdb/trial_report.sql with {source} = attenuation gives the fit and detection table.

-- Matching (ExposureMatcher's rule): the sighting's RPI is one of the keys' and its interval,
-- floor(time / 600), is within the tolerance of the RPI's interval (match_from..match_to).
-- The AEM is AES-CTR over the metadata: its byte 1 XOR the keystream byte tx_power_mask is the
-- TX power (a signed byte); outside -50..20 it is not plausible and the sighting is left out.
CREATE OR REPLACE TEMP TABLE matched AS
    SELECT time, receiver, transmitter, rpi, tx_power, rssi, rssi_correction,
           tx_power - (rssi + rssi_correction) AS attenuation
    FROM (
        SELECT s.time, coalesce(nullif(s.node, ''), s.board) AS receiver, r.transmitter, s.rpi, s.rssi,
               coalesce(s.rssi_correction, 0) AS rssi_correction,
               xor(('0x' || substr(s.aem, 3, 2))::INTEGER, r.tx_power_mask) AS b
        FROM {sightings} s JOIN {rpis} r
          ON lower(s.rpi) = r.rpi AND floor(s.time / 600) BETWEEN r.match_from AND r.match_to
        WHERE s.aem IS NOT NULL AND s.rssi IS NOT NULL
    ), LATERAL (SELECT CASE WHEN b >= 128 THEN b - 256 ELSE b END AS tx_power)
    WHERE tx_power BETWEEN -50 AND 20;

-- Ground truth (GroundTruth.distance): the last marker at or before the sighting, of the pair's
-- own timeline (receiver/transmitter columns, else a label pair:<rx>/<tx>) when the pair has
-- one, else of the markers of every pair; an empty distance there is no ground truth.
CREATE OR REPLACE TEMP TABLE marker_rows AS
    SELECT time::DOUBLE AS time, TRY_CAST(nullif(distance, '') AS DOUBLE) AS distance,
           CASE WHEN coalesce(receiver, '') <> '' AND coalesce(transmitter, '') <> '' THEN receiver
                WHEN label LIKE 'pair:%/%' THEN nullif(split_part(substr(label, 6), '/', 1), '') END AS rx,
           CASE WHEN coalesce(receiver, '') <> '' AND coalesce(transmitter, '') <> '' THEN transmitter
                WHEN label LIKE 'pair:%/%' THEN nullif(substr(label, 6 + length(split_part(substr(label, 6), '/', 1)) + 1), '') END AS tx
    FROM {markers};

CREATE OR REPLACE TEMP VIEW attenuation AS
    WITH scoped AS (SELECT * FROM marker_rows WHERE rx IS NOT NULL AND tx IS NOT NULL),
         everyone AS (SELECT * FROM marker_rows WHERE rx IS NULL OR tx IS NULL),
         pairs AS (SELECT DISTINCT rx, tx FROM scoped),
         own AS (SELECT m.* FROM matched m SEMI JOIN pairs p ON m.receiver = p.rx AND m.transmitter = p.tx),
         other AS (SELECT m.* FROM matched m ANTI JOIN pairs p ON m.receiver = p.rx AND m.transmitter = p.tx)
    SELECT time, receiver, transmitter, distance, attenuation, rpi, tx_power, rssi, rssi_correction FROM (
        SELECT a.*, k.distance FROM own a ASOF JOIN scoped k ON a.receiver = k.rx AND a.transmitter = k.tx AND a.time >= k.time
        UNION ALL
        SELECT a.*, k.distance FROM other a ASOF JOIN everyone k ON a.time >= k.time
    ) WHERE distance IS NOT NULL;
