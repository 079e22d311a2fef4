-- Reserve $n evaluation ids, so that ids follow the order files were read in.
SELECT nextval('evaluation_id_seq') AS evaluation_id FROM range($n) ORDER BY evaluation_id;
